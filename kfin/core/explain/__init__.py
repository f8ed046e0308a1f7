"""Why objects are stuck: the causes (one module each), blocking chains down to their root causes and the plan,
stuck objects found in a scan, the owner graph, what survives a deletion, and the same answers kept current from
watches."""
