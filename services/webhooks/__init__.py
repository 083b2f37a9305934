"""The webhooks service: subscriptions over HTTP, a dispatcher and Celery workers delivering."""
