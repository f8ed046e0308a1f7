"""What kfin knows and decides, terminal-free, in rooms by job whose imports run one way: read (the reader and the
facts), explain (causes, blocking chains, stuck objects), then predict (preflight, teardowns, the guard's answer)
and remove (plans, guarded writes, the audit log)."""
