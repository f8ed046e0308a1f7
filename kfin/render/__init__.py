"""How results look: the terminal, tables, explanations, plans, graphs and their exports, Prometheus text."""
