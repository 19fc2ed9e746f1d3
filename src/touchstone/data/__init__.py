"""Data model, loaders, column mapping and validation."""
