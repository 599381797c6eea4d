"""Request and response bodies (the HTTP contract), one module per resource."""
