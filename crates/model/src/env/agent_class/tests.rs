//! Tests of `--class` parsing and matching, and of the agent's identity.

use super::*;

fn agent() -> AgentClass {
    AgentClass {
        host: "lab-a1".into(),
        arch: "x86_64".into(),
        cpu_model: "AMD EPYC 7R13 Processor".into(),
        cpus: 48,
        mem_gib: Some(64),
        hypervisor: "bare".into(),
    }
}

fn err(text: &str) -> String {
    ClassFilter::parse(text).unwrap_err().to_string()
}

fn holds(text: &str, c: &AgentClass) -> bool {
    ClassFilter::parse(text).unwrap().matches(c)
}

#[test]
fn every_number_op_compares_cpus_and_mem() {
    let a = agent();
    for (text, want) in [
        ("cpus=48", true),
        ("cpus=47", false),
        ("cpus!=48", false),
        ("cpus!=2", true),
        ("cpus>=48", true),
        ("cpus>=49", false),
        ("cpus<=48", true),
        ("cpus<=47", false),
        ("cpus>47", true),
        ("cpus>48", false),
        ("cpus<49", true),
        ("cpus<48", false),
        ("mem=64", true),
        ("mem>=128", false),
        ("mem<128", true),
        ("mem!=64", false),
    ] {
        assert_eq!(holds(text, &a), want, "{text}");
    }
}

#[test]
fn unknown_memory_fails_every_mem_term_but_not_equal() {
    let a = AgentClass {
        mem_gib: None,
        ..agent()
    };
    for text in ["mem=64", "mem>=1", "mem<=100000", "mem>0", "mem<9"] {
        assert!(!holds(text, &a), "{text}");
    }
    assert!(holds("mem!=64", &a));
    let why = ClassFilter::parse("mem>=1").unwrap().why_not(&a);
    assert_eq!(why.as_deref(), Some("mem>=1: its memory is unknown"));
}

#[test]
fn text_fields_compare_ignoring_case_and_spacing_and_tilde_finds_substrings() {
    let a = agent();
    for (text, want) in [
        ("arch=x86_64", true),
        ("arch=X86_64", true),
        ("arch=aarch64", false),
        ("arch!=aarch64", true),
        ("arch~86", true),
        ("cpu=amd   epyc 7r13 processor", true),
        ("cpu=AMD EPYC", false),
        ("cpu~EPYC 7R13", true),
        ("cpu~epyc   7r13", true),
        ("cpu~Xeon", false),
        ("cpu!=Intel Xeon", true),
        ("hypervisor=bare", true),
        ("hypervisor!=bare", false),
        ("hypervisor~kvm", false),
        ("host=LAB-A1", true),
        ("host=lab-a2", false),
        ("host~lab-", true),
    ] {
        assert_eq!(holds(text, &a), want, "{text}");
    }
    let vm = AgentClass {
        hypervisor: "KVM".into(),
        ..agent()
    };
    assert!(holds("hypervisor=kvm", &vm));
    assert!(holds("hypervisor!=bare", &vm));
}

#[test]
fn all_terms_must_hold_and_whitespace_around_tokens_is_allowed() {
    let a = agent();
    let f = ClassFilter::parse("  cpus >= 32 , arch = x86_64 ,cpu ~ EPYC  ").unwrap();
    assert!(f.matches(&a));
    assert_eq!(f.to_string(), "cpus>=32,arch=x86_64,cpu~EPYC");
    assert!(!holds("cpus>=32,arch=aarch64", &a));
}

#[test]
fn any_and_host_build_the_filters_they_name() {
    let a = agent();
    assert_eq!(ClassFilter::parse(" any ").unwrap(), ClassFilter::any());
    assert_eq!(ClassFilter::parse("ANY").unwrap(), ClassFilter::default());
    assert!(ClassFilter::any().matches(&a));
    assert_eq!(ClassFilter::any().why_not(&a), None);
    assert_eq!(ClassFilter::any().to_string(), "any");
    assert!(ClassFilter::host("lab-a1").matches(&a));
    assert!(!ClassFilter::host("lab-a2").matches(&a));
    assert_eq!(
        ClassFilter::host("lab-a1"),
        ClassFilter::parse("host=lab-a1").unwrap()
    );
}

#[test]
fn display_is_canonical_and_parses_back_to_an_equal_filter() {
    for text in [
        "any",
        "cpus>=32,arch=x86_64",
        " mem < 512 ,cpu~EPYC   7R13, hypervisor != bare ",
        "cpus=4,cpus!=5,host~lab,mem>0,mem<=9,cpus>1",
    ] {
        let f: ClassFilter = text.parse().unwrap();
        let shown = f.to_string();
        assert!(!shown.contains(", "), "{shown}");
        assert_eq!(ClassFilter::parse(&shown).unwrap(), f, "{text}");
        assert_eq!(ClassFilter::parse(&shown).unwrap().to_string(), shown);
    }
    assert_eq!(
        ClassFilter::parse(" mem < 512 ,cpu~EPYC   7R13")
            .unwrap()
            .to_string(),
        "mem<512,cpu~EPYC 7R13"
    );
}

#[test]
fn filter_serialises_as_its_canonical_text() {
    let f = ClassFilter::parse("cpus >= 8, arch=x86_64").unwrap();
    let json = serde_json::to_string(&f).unwrap();
    assert_eq!(json, r#""cpus>=8,arch=x86_64""#);
    assert_eq!(serde_json::from_str::<ClassFilter>(&json).unwrap(), f);
    let bad = serde_json::from_str::<ClassFilter>(r#""cpus>>8""#).unwrap_err();
    assert!(bad.to_string().contains("unknown operator `>>`"), "{bad}");
}

#[test]
fn empty_text_and_empty_terms_are_refused() {
    assert_eq!(ClassFilter::parse("  "), Err(ClassFilterError::Empty));
    assert!(err("").contains("give `any` or terms"));
    for text in ["cpus>=2,,arch=x86_64", ",cpus>=2", "cpus>=2,", "cpus>=2, ,"] {
        let e = err(text);
        assert!(e.contains("has an empty term"), "{e}");
        assert!(e.contains("single commas"), "{e}");
    }
}

#[test]
fn unknown_or_missing_field_is_refused_with_the_fields_listed() {
    let e = err("cores>=8");
    assert!(e.contains("unknown field `cores`"), "{e}");
    assert!(e.contains("cpus, mem, arch, cpu, hypervisor, host"), "{e}");
    let e = err("cpus>=8,any");
    assert!(
        e.contains("unknown field `any`") && e.contains("`any` alone"),
        "{e}"
    );
    let e = err(">=8");
    assert!(e.contains("`>=8` has no field"), "{e}");
    assert!(e.contains("fields: cpus, mem"), "{e}");
}

#[test]
fn missing_or_unknown_operator_is_refused() {
    let e = err("cpus");
    assert!(e.contains("`cpus` has no operator after `cpus`"), "{e}");
    let e = err("cpu model=EPYC");
    assert!(e.contains("no operator after `cpu`"), "{e}");
    assert!(e.contains("FIELD OP VALUE"), "{e}");
    for (text, op) in [
        ("arch==x86_64", "=="),
        ("cpus=>4", "=>"),
        ("cpus> =4", "> ="),
        ("cpus>>4", ">>"),
        ("cpus!4", "!"),
    ] {
        let e = err(text);
        assert!(e.contains(&format!("unknown operator `{op}`")), "{e}");
        assert!(e.contains("operators: = != >= <= > < ~"), "{e}");
    }
}

#[test]
fn an_operator_that_does_not_fit_the_field_is_refused() {
    assert_eq!(
        err("arch>=x"),
        "`arch>=x`: `>=` does not apply to `arch`; it takes = != ~"
    );
    assert_eq!(
        err("cpus~3"),
        "`cpus~3`: `~` does not apply to `cpus`; it takes = != >= <= > <"
    );
    assert!(err("host<b").contains("does not apply to `host`"));
    assert!(err("mem~6").contains("does not apply to `mem`"));
}

#[test]
fn empty_values_and_bad_numbers_are_refused() {
    for text in ["arch=", "cpus>=  ", "cpu~"] {
        let e = err(text);
        assert!(e.contains("has no value after its operator"), "{e}");
    }
    for (text, value) in [
        ("cpus>=many", "many"),
        ("cpus=3.5", "3.5"),
        ("cpus>=-1", "-1"),
        ("cpus=+4", "+4"),
        ("mem>=99999999999999999999999", "99999999999999999999999"),
    ] {
        let e = err(text);
        assert!(
            e.contains(&format!("`{value}` is not a whole number")),
            "{e}"
        );
    }
    assert!(err("mem>=64G").contains("`mem` takes one (GiB)"));
    assert!(err("cpus=x").ends_with("`cpus` takes one"));
}

#[test]
fn a_field_fixed_twice_with_equals_is_refused_but_other_repeats_are_not() {
    assert_eq!(
        err("arch=x86_64, cpus>=2, arch = aarch64"),
        "`arch=x86_64` and `arch=aarch64` both fix `arch`; give `arch=` once"
    );
    assert!(err("cpus=4,cpus=4").contains("both fix `cpus`"));
    assert!(ClassFilter::parse("cpus>=4,cpus<=64,arch!=a,arch!=b,cpus=8").is_ok());
}

#[test]
fn why_not_names_the_first_failing_term_and_what_the_agent_has() {
    let small = AgentClass {
        cpus: 2,
        mem_gib: Some(4),
        ..agent()
    };
    let f = ClassFilter::parse("arch=x86_64, cpus >= 32, mem>=64").unwrap();
    assert_eq!(f.why_not(&small).as_deref(), Some("cpus>=32: it has 2"));
    assert!(!f.matches(&small));
    let f = ClassFilter::parse("mem>=64").unwrap();
    assert_eq!(f.why_not(&small).as_deref(), Some("mem>=64: it has 4 GiB"));
    let f = ClassFilter::parse("arch=aarch64").unwrap();
    assert_eq!(
        f.why_not(&small).as_deref(),
        Some("arch=aarch64: it is x86_64")
    );
    let f = ClassFilter::parse("cpu~Xeon").unwrap();
    assert_eq!(
        f.why_not(&small).as_deref(),
        Some("cpu~Xeon: it is AMD EPYC 7R13 Processor")
    );
    assert_eq!(ClassFilter::parse("cpus<=2").unwrap().why_not(&small), None);
}

#[test]
fn overrides_replace_the_named_fields_and_keep_the_rest() {
    let a = agent()
        .with_overrides("host=a1, cpus=32,arch=aarch64,mem=128,cpu= AMD  EPYC 9654 ,hypervisor=KVM")
        .unwrap();
    assert_eq!(
        a,
        AgentClass {
            host: "a1".into(),
            arch: "aarch64".into(),
            cpu_model: "AMD EPYC 9654".into(),
            cpus: 32,
            mem_gib: Some(128),
            hypervisor: "KVM".into(),
        }
    );
    let b = agent().with_overrides("cpus=8").unwrap();
    assert_eq!(b, AgentClass { cpus: 8, ..agent() });
    assert_eq!(agent().with_overrides("  ").unwrap(), agent());
    assert_eq!(agent().with_overrides("cpus=8,").unwrap(), b);
}

#[test]
fn overrides_with_an_unknown_key_a_bad_number_or_no_value_are_refused() {
    let e = agent().with_overrides("cpus=8,cores=4").unwrap_err();
    assert_eq!(
        e,
        ClassFilterError::OverrideUnknownKey {
            key: "cores".into()
        }
    );
    assert!(e.to_string().contains("keys: host, arch, cpu, cpus, mem"));
    let e = agent().with_overrides("mem=lots").unwrap_err().to_string();
    assert_eq!(
        e,
        "identity override `mem=lots`: `lots` is not a whole number"
    );
    let e = agent().with_overrides("cpus=-2").unwrap_err().to_string();
    assert!(e.contains("`-2` is not a whole number"), "{e}");
    for text in ["host", "host=", "=a1", "cpus=8,mem"] {
        let e = agent().with_overrides(text).unwrap_err().to_string();
        assert!(e.contains("is not KEY=VALUE"), "{text}: {e}");
    }
}

#[test]
fn of_takes_host_and_arch_and_the_fingerprints_machine_class() {
    let fp = Fingerprint {
        hostname: "lab-a1".into(),
        cpu_model: "AMD  EPYC   7R13 Processor".into(),
        online_cpus: 48,
        mem_total_kib: Some(64 * 1024 * 1024 - 2000),
        ..Fingerprint::default()
    };
    let a = AgentClass::of(&fp, "x86_64");
    assert_eq!(a, agent());
    assert_eq!(a.machine_class(), MachineClass::of(&fp));
    assert_eq!(
        a.to_string(),
        "lab-a1 · x86_64 · AMD EPYC 7R13 Processor · 48 CPUs · 64 GiB · bare"
    );
    let vm = Fingerprint {
        hypervisor: Some("KVM".into()),
        mem_total_kib: None,
        ..fp
    };
    let b = AgentClass::of(&vm, std::env::consts::ARCH);
    assert_eq!(b.hypervisor, "KVM");
    assert_eq!(b.arch, std::env::consts::ARCH);
    assert!(b.to_string().ends_with("48 CPUs · ? GiB · KVM"));
}

#[test]
fn agent_class_round_trips_through_json() {
    let a = agent();
    let json = serde_json::to_string(&a).unwrap();
    assert_eq!(serde_json::from_str::<AgentClass>(&json).unwrap(), a);
}
