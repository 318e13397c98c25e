//! Wall-clock readings in the two shapes Claude Code writes: epoch milliseconds, and
//! JavaScript's `toISOString()` (`2026-02-12T05:22:25.366Z`, always milliseconds, always Z).

pub fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

pub fn now_iso() -> String {
    iso(jiff::Timestamp::now())
}

pub fn iso(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

pub fn iso_from_ms(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(iso)
        .unwrap_or_else(|_| now_iso())
}

/// Parses an ISO timestamp back to epoch milliseconds.
pub fn parse_iso_ms(s: &str) -> Option<i64> {
    s.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

/// The local time of day of an epoch-milliseconds moment, `HH:MM:SS`, for people.
pub fn local_hms(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| "?".to_owned())
}

/// A filesystem-friendly timestamp for names of files moved aside: `20260212T052225366Z`.
pub fn compact_stamp() -> String {
    jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%S%3fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_has_milliseconds_and_z() {
        let ts = jiff::Timestamp::from_millisecond(1_770_873_745_006).unwrap();
        assert_eq!(iso(ts), "2026-02-12T05:22:25.006Z");
        let ts = jiff::Timestamp::from_millisecond(1_770_873_745_000).unwrap();
        assert_eq!(iso(ts), "2026-02-12T05:22:25.000Z");
        assert_eq!(
            parse_iso_ms("2026-02-12T05:22:25.006Z"),
            Some(1_770_873_745_006)
        );
        assert_eq!(compact_stamp().len(), 19);
    }
}
