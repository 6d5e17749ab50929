"""SOP ingestion: markdown files with front matter under ``.semspec/sources/docs/sops/`` become
parent and chunk entities in the knowledge graph, one named graph per file."""
