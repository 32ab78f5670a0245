import cProfile, pstats, time
async def test_http(api):
    for _ in range(20): await api.get("/health/live")
    p = cProfile.Profile(); p.enable()
    for _ in range(200): await api.get("/health/live")
    p.disable()
    st = pstats.Stats(p); st.sort_stats("cumulative").print_stats(60)
