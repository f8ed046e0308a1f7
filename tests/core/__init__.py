"""Unit tests of kfin.core on plain values: no API server, no command line."""
