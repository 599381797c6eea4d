"""Explicit mappers between HTTP schemas and service values, one module per resource."""
