"""Part code: masked."""
