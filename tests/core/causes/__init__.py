"""One test module per cause (kfin/core/explain/causes), on plain values."""
