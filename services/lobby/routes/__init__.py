"""The lobby's HTTP routes by resource; ``services.lobby.app.create_app`` composes them."""
