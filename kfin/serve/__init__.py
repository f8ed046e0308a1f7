"""kfin serve: the Prometheus exporter (the scan it serves is passed in by the command)."""
