//! When a recurring job comes due (`scalelab submit --every`): a time of day in UTC, on every
//! day or on the days named — `03:00`, `daily 03:00`, `mon 03:00`, `mon,thu 21:30` — and the
//! next occurrence after a moment ([`Every::next_after`]).
//!
//! Written here, not taken from a cron crate: a lab's recurring measurement is "weekly at a
//! quiet hour", which this grammar says plainly; the arithmetic is days since the epoch (the
//! epoch was a Thursday), with no calendar or time zone to get wrong. Times are UTC, said so in
//! every message, since the agents of one lab may sit in several time zones.

use std::fmt;

/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;

/// The days of the week, Monday first, as written in `--every`.
const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// A parsed `--every`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Every {
    /// The days it fires on (0 = Monday); all seven for a daily schedule.
    days: Vec<u8>,
    /// Minutes after midnight UTC.
    minute: u32,
}

/// Why an `--every` does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a schedule: {why} — write e.g. `mon 03:00`, `mon,thu 21:30` or `daily 03:00` (UTC)"
)]
pub struct EveryError {
    text: String,
    why: String,
}

impl Every {
    /// Parses `[daily|DAY[,DAY…]] HH:MM`.
    pub fn parse(text: &str) -> Result<Every, EveryError> {
        let fail = |why: &str| EveryError {
            text: text.to_owned(),
            why: why.to_owned(),
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        let (days, time) = match words.as_slice() {
            [time] => (None, *time),
            [days, time] => (Some(*days), *time),
            [] => return Err(fail("it is empty")),
            _ => return Err(fail("too many words")),
        };
        let days = match days.map(str::to_ascii_lowercase).as_deref() {
            None | Some("daily") => (0..7).collect(),
            Some(list) => {
                let mut days = Vec::new();
                for day in list.split(',') {
                    let index = DAYS
                        .iter()
                        .position(|d| *d == day || day.starts_with(d) && is_day_name(day, d))
                        .ok_or_else(|| fail(&format!("`{day}` is not a day (mon … sun)")))?;
                    days.push(index as u8);
                }
                days.sort_unstable();
                days.dedup();
                days
            }
        };
        let (h, m) = time
            .split_once(':')
            .ok_or_else(|| fail("the time is HH:MM"))?;
        // Digits only: `str::parse` also takes a sign (`+3:00` read as 03:00).
        let number = |s: &str, max: u32| {
            s.parse::<u32>().ok().filter(|v| {
                *v <= max && !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit())
            })
        };
        let (Some(h), Some(m)) = (number(h, 23), number(m, 59)) else {
            return Err(fail("the time is HH:MM, 00:00 to 23:59"));
        };
        Ok(Every {
            days,
            minute: h * 60 + m,
        })
    }

    /// The first occurrence strictly after `after` (ms since the epoch, UTC).
    pub fn next_after(&self, after: i64) -> i64 {
        let day = after.div_euclid(DAY_MS);
        let at = i64::from(self.minute) * 60_000;
        (day..=day + 7)
            .map(|d| (d, d * DAY_MS + at))
            .find(|&(d, t)| t > after && self.days.contains(&weekday(d)))
            .map(|(_, t)| t)
            .expect("every schedule fires at least once a week")
    }
}

/// `day` (days since the epoch) as 0 = Monday … 6 = Sunday; 1970-01-01 was a Thursday.
fn weekday(day: i64) -> u8 {
    (day + 3).rem_euclid(7) as u8
}

/// Whether `word` is the day `short` written out (`monday`, `thurs`).
fn is_day_name(word: &str, short: &str) -> bool {
    const FULL: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    FULL.iter()
        .any(|full| full.starts_with(short) && full.starts_with(word))
}

impl fmt::Display for Every {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.days.len() == 7 {
            f.write_str("daily")?;
        } else {
            let names: Vec<&str> = self.days.iter().map(|&d| DAYS[usize::from(d)]).collect();
            f.write_str(&names.join(","))?;
        }
        write!(f, " {:02}:{:02}", self.minute / 60, self.minute % 60)
    }
}

impl std::str::FromStr for Every {
    type Err = EveryError;
    fn from_str(s: &str) -> Result<Every, EveryError> {
        Every::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-30, a Monday, 00:00 UTC.
    const MONDAY: i64 = 1_795_996_800_000;

    #[test]
    fn the_reference_monday_is_a_monday() {
        assert_eq!(MONDAY % DAY_MS, 0);
        assert_eq!(weekday(MONDAY / DAY_MS), 0);
        assert_eq!(weekday(0), 3, "1970-01-01 was a Thursday");
    }

    #[test]
    fn a_weekly_schedule_fires_once_a_week_at_its_time() {
        let e = Every::parse("mon 03:00").unwrap();
        let three = MONDAY + 3 * 3_600_000;
        assert_eq!(e.next_after(MONDAY), three);
        assert_eq!(e.next_after(three - 1), three);
        assert_eq!(e.next_after(three), three + 7 * DAY_MS, "strictly after");
        assert_eq!(e.next_after(MONDAY + DAY_MS), three + 7 * DAY_MS);
    }

    #[test]
    fn days_times_and_their_spellings() {
        let e = Every::parse("Mon,thursday 21:30").unwrap();
        assert_eq!(e.to_string(), "mon,thu 21:30");
        let first = e.next_after(MONDAY);
        assert_eq!(first, MONDAY + 21 * 3_600_000 + 30 * 60_000);
        assert_eq!(e.next_after(first), first + 3 * DAY_MS);
        let daily = Every::parse("03:05").unwrap();
        assert_eq!(daily.to_string(), "daily 03:05");
        assert_eq!(Every::parse("daily 3:05").unwrap(), daily);
        assert_eq!(
            daily.next_after(MONDAY + 4 * 3_600_000),
            MONDAY + DAY_MS + 185 * 60_000
        );
        assert_eq!(Every::parse(&e.to_string()).unwrap(), e);
    }

    #[test]
    fn what_is_not_a_schedule_is_refused_with_an_example() {
        for (text, why) in [
            ("", "empty"),
            ("mon", "HH:MM"),
            ("moon 03:00", "`moon` is not a day"),
            ("mon 24:00", "00:00 to 23:59"),
            ("mon 03:60", "00:00 to 23:59"),
            ("mon 3", "HH:MM"),
            ("mon 03:00 utc", "too many words"),
            ("mon -1:00", "00:00 to 23:59"),
            ("+3:00", "00:00 to 23:59"),
            ("mon 03:+5", "00:00 to 23:59"),
        ] {
            let err = Every::parse(text).unwrap_err().to_string();
            assert!(
                err.contains(why) && err.contains("mon 03:00"),
                "{text}: {err}"
            );
        }
    }
}
