"""Graph store adapters: Oxigraph files, a SPARQL endpoint, term binding, which store to open."""
