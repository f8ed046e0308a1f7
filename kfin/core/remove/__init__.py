"""Acting on what was explained: removal plans, the guarded writes that apply them, the audit log, and kfin delete's
DELETE followed by what holds the object."""
