"""Human handoff on the service: the mode store, the notifications, the live feed."""
