"""What kfin knows and decides, terminal-free: facts, causes, blocking chains, owner graphs, stuck objects, removal."""
