"""Wire formats ↔ engine messages. Pure translation; the raw objects are kept as given."""
