from ragcore.processes import (
    LONGEST_RESTART_SECONDS,
    STEADY_SECONDS,
    api_processes,
    cores_allowed,
    deaths_in_a_row,
    restart_delay,
)


def test_a_container_quota_caps_the_schedulable_cores_rounded_up():
    assert cores_allowed(8, None) == 8
    assert cores_allowed(8, "max 100000\n") == 8
    assert cores_allowed(8, "200000 100000\n") == 2
    assert cores_allowed(8, "150000 100000") == 2  # 1.5 cores: two processes share them
    assert cores_allowed(8, "50000 100000") == 1
    assert cores_allowed(2, "800000 100000") == 2  # the quota never adds cores
    assert cores_allowed(0, None) == 1
    assert cores_allowed(4, "garbage") == 4
    assert cores_allowed(4, "0 100000") == 4


def test_app_workers_zero_is_one_api_process_a_core():
    assert api_processes(0, 2) == 2
    assert api_processes(0, 16) == 16
    assert api_processes(3, 16) == 3
    assert api_processes(1, 16) == 1


def test_a_process_dying_again_and_again_waits_longer_each_time_up_to_a_bound():
    delays = [restart_delay(n) for n in range(1, 12)]
    assert delays[0] == 0.5 and delays[1] == 1.0 and delays[2] == 2.0
    assert delays == sorted(delays) and max(delays) == LONGEST_RESTART_SECONDS
    assert restart_delay(10_000) == LONGEST_RESTART_SECONDS


def test_a_process_that_ran_steadily_starts_the_count_again():
    assert deaths_in_a_row(0, 0.2) == 1
    assert deaths_in_a_row(4, 3.0) == 5
    assert deaths_in_a_row(4, STEADY_SECONDS) == 1
