"""Small shared helpers with no knowledge of Kubernetes: durations, threads, the garbage collector, safe text."""
