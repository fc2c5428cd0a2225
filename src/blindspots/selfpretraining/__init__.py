"""Part code: selfpretraining."""
