"""What semspec knows about a repository, read from its files: the code meaning graph
(``code_index``) and the rule and SOP sources (``sources``). Nothing here touches NATS or
Temporal; it reads files and git and writes the graph store (ADR 0003, floor 3)."""
