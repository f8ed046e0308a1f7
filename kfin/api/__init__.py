"""The only place kfin talks to the Kubernetes API: config, connection, request paths, discovery, scans, watches."""
