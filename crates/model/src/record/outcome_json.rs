//! Reading a [`TrialOutcome`] without buffering it. serde's derive for an internally tagged
//! enum (`{"status": "ok", …}`) first copies the whole object into a tree of its own, since the
//! tag could come last: a trial with 600,000 samples took ~400 bytes a sample that way, and
//! `import` ~15 times the file's size. scalelab writes `status` first, so the rest is read
//! straight into the variant; an object with its tag elsewhere (a file edited, or re-sorted by
//! a tool) is still read, from a copy of its members' text.

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::{TrialMeasurement, TrialOutcome};

/// The tag's values.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Ok,
    Failed,
}

/// The `failed` variant's fields.
#[derive(Deserialize)]
struct Failed {
    reason: String,
}

impl<'de> Deserialize<'de> for TrialOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(OutcomeVisitor)
    }
}

struct OutcomeVisitor;

impl<'de> Visitor<'de> for OutcomeVisitor {
    type Value = TrialOutcome;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(r#"a trial outcome, {"status": "ok" or "failed", …}"#)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TrialOutcome, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Err(de::Error::missing_field("status"));
        };
        if first == "status" {
            let status: Status = map.next_value()?;
            let rest = MapAccessDeserializer::new(map);
            return Ok(match status {
                Status::Ok => TrialOutcome::Ok(TrialMeasurement::deserialize(rest)?),
                Status::Failed => TrialOutcome::Failed {
                    reason: Failed::deserialize(rest)?.reason,
                },
            });
        }
        // The tag is not first: gather the object's members as written (no tree), then read
        // the variant from them.
        let mut object = String::from("{");
        let mut status = None;
        let mut key = first;
        loop {
            let value: Box<RawValue> = map.next_value()?;
            if key == "status" {
                status =
                    Some(serde_json::from_str::<Status>(value.get()).map_err(de::Error::custom)?);
            } else {
                if object.len() > 1 {
                    object.push(',');
                }
                object.push_str(&serde_json::to_string(&key).map_err(de::Error::custom)?);
                object.push(':');
                object.push_str(value.get());
            }
            match map.next_key::<String>()? {
                Some(next) => key = next,
                None => break,
            }
        }
        object.push('}');
        match status.ok_or_else(|| de::Error::missing_field("status"))? {
            Status::Ok => serde_json::from_str(&object).map(TrialOutcome::Ok),
            Status::Failed => serde_json::from_str::<Failed>(&object)
                .map(|f| TrialOutcome::Failed { reason: f.reason }),
        }
        .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_first_or_anywhere_reads_the_same() {
        let failed = TrialOutcome::Failed {
            reason: "exit 1".into(),
        };
        let text = serde_json::to_string(&failed).unwrap();
        assert!(text.starts_with(r#"{"status":"failed""#), "{text}");
        assert_eq!(serde_json::from_str::<TrialOutcome>(&text).unwrap(), failed);
        let moved: TrialOutcome =
            serde_json::from_str(r#"{"reason": "exit 1", "status": "failed"}"#).unwrap();
        assert_eq!(moved, failed);
        let ok = TrialOutcome::Ok(TrialMeasurement {
            window: super::super::Nanos(5),
            task_ops: vec![3],
            ..TrialMeasurement::default()
        });
        let text = serde_json::to_string(&ok).unwrap();
        assert_eq!(serde_json::from_str::<TrialOutcome>(&text).unwrap(), ok);
        let value = serde_json::to_value(&ok).unwrap();
        assert_eq!(serde_json::from_value::<TrialOutcome>(value).unwrap(), ok);
        for bad in [r#"{}"#, r#"{"status": "gone"}"#, r#"{"window": 5}"#] {
            assert!(serde_json::from_str::<TrialOutcome>(bad).is_err(), "{bad}");
        }
    }
}
