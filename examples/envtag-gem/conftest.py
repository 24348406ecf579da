pytest_plugins = ["envtag.testing"]
