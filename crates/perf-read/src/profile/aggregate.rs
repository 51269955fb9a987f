//! Folding the unique stacks into per-function and per-DSO costs.
//!
//! Self cost goes to the leaf's function; total ("children") cost goes once per stack to every
//! distinct function on it, so recursion is not counted twice (the `perf report --children`
//! rule). Stacks are re-expressed as function ids, root first, and merged where they collapse
//! to the same functions, ready for a flame graph.

use std::collections::HashMap;

use super::costs::{DsoCost, FunctionCost, Profile, StackCost};
use super::records::RawProfile;
use super::symbols::Names;

pub(super) fn aggregate(raw: RawProfile, names: Names) -> Profile {
    let mut functions: Vec<FunctionCost> = names
        .symbols
        .iter()
        .map(|s| FunctionCost {
            name: s.name.clone(),
            dso: s.dso.clone(),
            kernel: s.kernel,
            self_samples: 0,
            self_period: 0,
            total_samples: 0,
            total_period: 0,
            size: s.size,
        })
        .collect();
    let mut merged: HashMap<Vec<u32>, (u64, u64)> = HashMap::new();
    let mut seen: Vec<u32> = Vec::new();
    for stack in &raw.stacks {
        let syms: Vec<u32> = stack
            .frames
            .iter()
            .rev()
            .map(|&f| names.of_frame[f as usize])
            .collect();
        if let Some(&leaf) = syms.last() {
            let f = &mut functions[leaf as usize];
            f.self_samples += stack.samples;
            f.self_period = f.self_period.saturating_add(stack.period);
        }
        seen.clear();
        for &s in &syms {
            if !seen.contains(&s) {
                seen.push(s);
                let f = &mut functions[s as usize];
                f.total_samples += stack.samples;
                f.total_period = f.total_period.saturating_add(stack.period);
            }
        }
        let e = merged.entry(syms).or_default();
        e.0 += stack.samples;
        e.1 = e.1.saturating_add(stack.period);
    }

    // Sort functions by self period and renumber the stacks to match.
    let mut order: Vec<u32> = (0..functions.len() as u32).collect();
    order.sort_by(|&a, &b| {
        let (fa, fb) = (&functions[a as usize], &functions[b as usize]);
        fb.self_period
            .cmp(&fa.self_period)
            .then(fb.total_period.cmp(&fa.total_period))
            .then_with(|| fa.name.cmp(&fb.name))
    });
    let mut new_id = vec![0u32; functions.len()];
    for (new, &old) in order.iter().enumerate() {
        new_id[old as usize] = new as u32;
    }
    let sorted: Vec<FunctionCost> = order
        .iter()
        .map(|&old| functions[old as usize].clone())
        .collect();
    let mut stacks: Vec<StackCost> = merged
        .into_iter()
        .map(|(frames, (samples, period))| StackCost {
            frames: frames.into_iter().map(|f| new_id[f as usize]).collect(),
            samples,
            period,
        })
        .collect();
    stacks.sort_by(|a, b| b.period.cmp(&a.period).then(a.frames.cmp(&b.frames)));

    let mut dso_map: HashMap<(String, bool), (u64, u64)> = HashMap::new();
    for f in &sorted {
        let e = dso_map.entry((f.dso.clone(), f.kernel)).or_default();
        e.0 += f.self_samples;
        e.1 = e.1.saturating_add(f.self_period);
    }
    let mut dsos: Vec<DsoCost> = dso_map
        .into_iter()
        .map(|((dso, kernel), (samples, period))| DsoCost {
            dso,
            kernel,
            samples,
            period,
        })
        .collect();
    dsos.sort_by(|a, b| b.period.cmp(&a.period).then_with(|| a.dso.cmp(&b.dso)));

    Profile {
        event: raw.event,
        tally: raw.tally,
        functions: sorted,
        dsos,
        stacks,
        unique_addresses: raw.frames.len(),
        notes: names.notes,
    }
}

#[cfg(test)]
mod tests {
    use super::super::costs::SampleTally;
    use super::super::records::{Frame, RawStack};
    use super::super::symbols::Symbol;
    use super::*;

    fn sym(name: &str) -> Symbol {
        Symbol {
            name: name.into(),
            dso: "x".into(),
            kernel: false,
            size: Some(16),
        }
    }

    #[test]
    fn self_goes_to_the_leaf_and_total_counts_recursion_once() {
        // frames 0,1,2 -> symbols a, b, a (recursion through a).
        let raw = RawProfile {
            event: "cpu-clock".into(),
            frames: vec![Frame::Unmapped(1), Frame::Unmapped(2), Frame::Unmapped(3)],
            stacks: vec![
                RawStack {
                    frames: vec![0, 1, 2].into_boxed_slice(),
                    samples: 3,
                    period: 30,
                },
                RawStack {
                    frames: vec![1].into_boxed_slice(),
                    samples: 1,
                    period: 10,
                },
            ],
            tally: SampleTally {
                samples: 4,
                period: 40,
                ..SampleTally::default()
            },
            ..RawProfile::default()
        };
        let names = Names {
            symbols: vec![sym("a"), sym("b")],
            of_frame: vec![0, 1, 0],
            notes: vec![],
        };
        let p = aggregate(raw, names);
        let a = p.functions.iter().find(|f| f.name == "a").unwrap();
        let b = p.functions.iter().find(|f| f.name == "b").unwrap();
        assert_eq!(
            (a.self_period, a.total_period, a.total_samples),
            (30, 30, 3)
        );
        assert_eq!((b.self_period, b.total_period), (10, 40));
        assert_eq!(p.functions[0].name, "a");
        // Root first: the first stack is a <- b <- a, stored as [a, b, a] reversed = [a, b, a].
        let top = &p.stacks[0];
        assert_eq!(top.period, 30);
        assert_eq!(top.frames.len(), 3);
        assert_eq!(p.dsos.len(), 1);
        assert_eq!(p.dsos[0].period, 40);
    }
}
