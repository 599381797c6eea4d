"""HTTP edge: routers, request/response schemas, dependencies, problem+json."""
