"""What kfin reads, and the questions the causes ask of it: the Reader (every read of one cluster, its caches), the
Facts built on it, the command's Scope, the contexts or file a scan reads, reads started ahead and facts made before
a scan's last list ends, the object a command names, and the catalog of ecosystem finalizers."""
