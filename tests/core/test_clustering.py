"""Questions grouped by need (ragcore.insights.clustering): hand-made vectors, the merging
checked against a plain greedy one, and the two figures the evaluation reports."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ragcore.insights.clustering import (
    agglomerate,
    cluster,
    completeness,
    purity,
    relative_similarity,
    representative,
)


def around(axis: int, *offsets: float, dims: int = 6) -> list[list[float]]:
    """Vectors close to one axis: the same need asked in slightly different words."""
    rows = []
    for k, offset in enumerate(offsets):
        row = [0.0] * dims
        row[axis] = 1.0
        row[(axis + 1 + k) % dims] = offset
        rows.append(row)
    return rows


# three needs of 3, 2 and 2 questions, interleaved
NEEDS = [0, 1, 0, 2, 1, 0, 2]
VECTORS = [
    around(0, 0.3)[0],
    around(2, 0.2)[0],
    around(0, 0.0, 0.35)[1],
    around(4, 0.3)[0],
    around(2, 0.0, 0.25)[1],
    around(0, 0.0, 0.0, 0.4)[2],
    around(4, 0.0, 0.2)[1],
]


def test_nothing_to_group():
    assert cluster([]) == []
    assert agglomerate(np.zeros((0, 0)), 0.5) == []


def test_one_question_is_a_group_of_its_own():
    assert cluster([[0.3, 0.4]]) == [[0]]


def test_questions_group_by_need_biggest_group_first_then_by_smallest_index():
    assert cluster(VECTORS) == [[0, 2, 5], [1, 4], [3, 6]]


def test_the_same_questions_in_another_order_group_alike():
    expected = {frozenset(g) for g in cluster(VECTORS)}
    for order in itertools.islice(itertools.permutations(range(len(VECTORS))), 0, 5040, 97):
        groups = cluster([VECTORS[i] for i in order])
        assert {frozenset(order[i] for i in g) for g in groups} == expected
        assert all(g == sorted(g) for g in groups)


def test_length_does_not_matter_and_a_zero_vector_is_like_nothing():
    scaled = [[value * (3.0 + i) for value in row] for i, row in enumerate(VECTORS)]
    assert cluster(scaled) == cluster(VECTORS)
    assert cluster([*VECTORS, [0.0] * 6]) == [*cluster(VECTORS), [7]]


def test_the_threshold_decides_how_alike_groups_must_be():
    assert cluster(VECTORS, threshold=-10) == [list(range(7))]
    # near-duplicates stay together whatever the threshold; the rest fall apart
    twins = [[1.0, 0.0, 0.0], [1.0, 0.01, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert cluster(twins, threshold=10) == [[0, 1], [2], [3]]
    assert cluster(twins, threshold=10, duplicates=1.1) == [[0], [1], [2], [3]]


def test_bad_vectors_are_refused():
    with pytest.raises(ValueError, match="equally long"):
        cluster([[1.0, 0.0], [1.0]])


# ---------------------------------------------------------------- merging


# a chain: 0 and 1 alike, 1 and 2 alike, 0 and 2 not
CHAIN = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.9], [0.1, 0.9, 1.0]])


@pytest.mark.parametrize(
    "linkage, threshold, groups",
    [
        ("single", 0.5, [[0, 1, 2]]),  # through the chain
        ("complete", 0.5, [[0, 1], [2]]),  # its least alike pair: 0.1
        ("average", 0.5, [[0, 1, 2]]),  # the mean: (0.1 + 0.9) / 2 = 0.5, at the threshold
        ("average", 0.51, [[0, 1], [2]]),
    ],
)
def test_linkages(linkage, threshold, groups):
    assert agglomerate(CHAIN, threshold, linkage) == groups  # type: ignore[arg-type]


def test_the_matrix_given_is_left_untouched():
    before = CHAIN.copy()
    agglomerate(CHAIN, 0.5)
    assert np.array_equal(before, CHAIN)


def test_weights_count_the_questions_a_row_stands_for():
    # 0 and 1 merge first; then 2 is 0.9 alike to 1 and 0.1 to 0: the mean leans on weights
    assert agglomerate(CHAIN, 0.6, weights=[1, 1, 1]) == [[0, 1], [2]]
    assert agglomerate(CHAIN, 0.6, weights=[1, 9, 1]) == [[0, 1, 2]]


def greedy(similar: np.ndarray, threshold: float) -> list[list[int]]:
    """Average linkage as the textbook says it: merge the most alike pair of groups (mean
    over their members' pairs) while it is at or above the threshold."""
    groups = [[i] for i in range(len(similar))]
    while len(groups) > 1:
        mean, a, b = max(
            (similar[np.ix_(groups[a], groups[b])].mean(), a, b)
            for a, b in itertools.combinations(range(len(groups)), 2)
        )
        if mean < threshold:
            break
        groups[a] += groups.pop(b)
    return sorted((sorted(g) for g in groups), key=lambda g: (-len(g), g[0]))


@pytest.mark.parametrize("seed", range(20))
def test_the_nearest_neighbour_chain_merges_as_the_greedy_rule_does(seed):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(25, 4))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    similar = vectors @ vectors.T
    for threshold in (-0.2, 0.0, 0.3, 0.6):
        assert agglomerate(similar, threshold) == greedy(similar, threshold)


def test_relative_similarity_takes_each_rows_usual_closeness_off():
    similar = np.array([[1.0, 0.8, 0.2], [0.8, 1.0, 0.4], [0.2, 0.4, 1.0]])
    # usual closeness with one neighbour: 0.8, 0.8, 0.4
    relative = relative_similarity(similar, 1, 0.0)
    assert relative[0, 1] == pytest.approx(0.8 - 0.8)
    assert relative[1, 2] == pytest.approx(0.4 - 0.6)
    assert relative[0, 2] == pytest.approx(0.2 - 0.6)
    # with two: 0.5, 0.6, 0.3
    assert relative_similarity(similar, 5, 0.0)[0, 1] == pytest.approx(0.8 - 0.55)
    assert relative_similarity(np.ones((1, 1)), 5, 0.25)[0, 0] == pytest.approx(
        0.75
    )  # no neighbour: the floor


# ---------------------------------------------------------------- naming and figures


def test_the_representative_is_the_member_nearest_the_centre():
    vectors = [[1.0, 0.0], [0.7, 0.7], [0.0, 1.0], [0.9, 0.5], [5.0, 0.0]]
    assert representative(vectors, [0, 1, 2]) == 1
    assert representative(vectors, [2, 0]) == 0  # a tie: the smallest index
    assert representative(vectors, [4]) == 4
    with pytest.raises(ValueError):
        representative(vectors, [])


def test_purity_and_completeness():
    labels = ["a", "a", "a", "b", "b", "c"]
    groups = [[0, 1, 3], [2], [4, 5]]
    # majorities: a (2 of 3), a (1), b or c (1 of 2)
    assert purity(groups, labels) == pytest.approx(4 / 6)
    # a's biggest share is 2, b's 1, c's 1
    assert completeness(groups, labels) == pytest.approx(4 / 6)
    alone = [[i] for i in range(6)]
    assert purity(alone, labels) == 1.0
    assert completeness(alone, labels) == pytest.approx(3 / 6)
    assert completeness([list(range(6))], labels) == 1.0
    assert purity([list(range(6))], labels) == pytest.approx(3 / 6)
    assert purity([], []) == completeness([], []) == 1.0
