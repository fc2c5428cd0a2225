"""Part code: privileged."""
