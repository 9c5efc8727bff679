"""Dashboard pages: each module has register(app, ctx) and a layout."""
