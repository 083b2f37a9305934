"""The clocks service: turns the clocks that ran out into ``TimeOut`` commands."""
