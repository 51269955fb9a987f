use std::path::Path;

use super::*;

fn fixture(machine: &str) -> CpuTopology {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../model/tests/fixtures/topology")
        .join(machine);
    assert!(root.is_dir(), "fixture {} is missing", root.display());
    CpuTopology::read_at(&root)
}

fn shown(marks: &[BoundaryMark]) -> Vec<(u32, String)> {
    marks
        .iter()
        .map(|m| {
            let text: Vec<String> = m.crossed.iter().map(ToString::to_string).collect();
            (m.n, text.join(" "))
        })
        .collect()
}

#[test]
fn default_points_include_the_topology_boundaries() {
    assert_eq!(
        default_points(&fixture("xeon-2s")),
        [1, 2, 4, 8, 16, 28, 32, 56, 64, 112]
    );
    assert_eq!(
        default_points(&fixture("epyc-2s-nps4")),
        [1, 2, 4, 8, 16, 32, 64, 128, 256]
    );
    assert_eq!(default_points(&fixture("arm-64")), [1, 2, 4, 8, 16, 32, 64]);
    // 3 usable cores × 2 threads in the cpuset, not the host's 32 CPUs.
    assert_eq!(default_points(&fixture("container-6of32")), [1, 2, 3, 4, 6]);
    assert_eq!(default_points(&CpuTopology::default()), [1]);
}

#[test]
fn xeon_marks_follow_the_placement() {
    let t = fixture("xeon-2s");
    let points = default_points(&t);
    // cores: the second task is on socket 1; the 57th is the first sibling.
    assert_eq!(
        crossings(&t, &Pin::Cores),
        [
            (2, Boundary::SecondL3),
            (2, Boundary::SecondNode),
            (2, Boundary::SecondSocket),
            (57, Boundary::Smt)
        ]
    );
    assert_eq!(
        shown(&marks(&points, &crossings(&t, &Pin::Cores))),
        [
            (2, "↑ 2nd L3 ↑ 2nd node ↑ 2nd socket".to_string()),
            (64, "↑ SMT".to_string())
        ]
    );
    // compact: a sibling at 2, socket 1 only after all 56 threads of socket 0.
    assert_eq!(
        shown(&marks(&points, &crossings(&t, &Pin::Compact))),
        [
            (2, "↑ SMT".to_string()),
            (64, "↑ 2nd L3 ↑ 2nd node ↑ 2nd socket".to_string())
        ]
    );
    assert!(crossings(&t, &Pin::None).is_empty());
}

#[test]
fn epyc_compact_marks_the_second_ccx_node_and_socket() {
    let t = fixture("epyc-2s-nps4");
    assert_eq!(
        crossings(&t, &Pin::Compact),
        [
            (2, Boundary::Smt),
            (17, Boundary::SecondL3),
            (33, Boundary::SecondNode),
            (129, Boundary::SecondSocket)
        ]
    );
    // The measured points past them: 32 (the 2nd CCX), 64 (2nd node), 256 (2nd socket).
    assert_eq!(
        shown(&marks(&default_points(&t), &crossings(&t, &Pin::Compact))),
        [
            (2, "↑ SMT".to_string()),
            (32, "↑ 2nd L3".to_string()),
            (64, "↑ 2nd node".to_string()),
            (256, "↑ 2nd socket".to_string())
        ]
    );
    assert_eq!(
        crossings(&t, &Pin::SpreadNodes),
        [
            (2, Boundary::SecondL3),
            (2, Boundary::SecondNode),
            (5, Boundary::SecondSocket),
            (129, Boundary::Smt)
        ]
    );
}

#[test]
fn arm_and_container_marks() {
    assert!(crossings(&fixture("arm-64"), &Pin::Cores).is_empty());
    let t = fixture("container-6of32");
    assert_eq!(crossings(&t, &Pin::Cores), [(4, Boundary::Smt)]);
    assert_eq!(
        shown(&marks(&[1, 2, 3, 6], &crossings(&t, &Pin::Cores))),
        [(6, "↑ SMT".to_string())]
    );
}

#[test]
fn a_512_cpu_machine_has_bounded_default_points() {
    let t = model::env::topology_512();
    assert_eq!(default_points(&t), [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]);
    assert_eq!(crossings(&t, &Pin::Cores).len(), 4);
}
