"""Fake provider servers for tests/io: they speak the providers' real wire format on 127.0.0.1,
so the real client libraries run against them unchanged."""
