import pytest

from twin.iso10816 import Zone, assess, boundaries
from twin.models import Foundation


@pytest.mark.parametrize(
    ("value", "group", "foundation", "zone"),
    [
        (2.2, 1, Foundation.RIGID, Zone.A),
        (2.3, 1, Foundation.RIGID, Zone.B),
        (4.5, 1, Foundation.RIGID, Zone.C),
        (7.1, 1, Foundation.RIGID, Zone.D),
        (9.4, 1, Foundation.RIGID, Zone.D),
        (7.8, 1, Foundation.FLEXIBLE, Zone.C),
        (11.0, 1, Foundation.FLEXIBLE, Zone.D),
        (1.3, 2, Foundation.RIGID, Zone.A),
        (4.4, 2, Foundation.RIGID, Zone.C),
        (2.6, 2, Foundation.FLEXIBLE, Zone.B),
    ],
)
def test_zone_boundaries_follow_iso_10816_3(value: float, group: int, foundation: Foundation, zone: Zone) -> None:
    assert assess(value, group, foundation).zone is zone


def test_unknown_machine_group_is_rejected_with_the_valid_groups() -> None:
    with pytest.raises(ValueError, match="1 or 2"):
        boundaries(3, Foundation.RIGID)
