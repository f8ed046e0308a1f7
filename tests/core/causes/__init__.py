"""One test module per cause (kfin/core/causes), on plain values."""
