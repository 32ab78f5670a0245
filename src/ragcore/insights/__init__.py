"""What customers asked and were not answered well: their questions grouped by the need
they express (``clustering``), for GET /insights/gaps and GET /insights/top-questions."""
