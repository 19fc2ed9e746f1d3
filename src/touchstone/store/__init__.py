"""The run store."""

from touchstone.store.sqlite import RunStore, default_store_path

__all__ = ["RunStore", "default_store_path"]
