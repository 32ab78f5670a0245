from ragcore.knowledge.jobs import ingested_as_job


def test_only_an_upload_larger_than_the_threshold_becomes_a_job():
    assert ingested_as_job(1_048_577, 1_048_576)
    assert not ingested_as_job(1_048_576, 1_048_576)
    assert ingested_as_job(1, 0)  # 0: every upload
