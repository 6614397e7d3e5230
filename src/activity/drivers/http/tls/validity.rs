//! A certificate's validity dates (RFC 5280 §4.1.2.5), read from its DER
//! without a general X.509 parser: the certificate's `tbsCertificate`, past
//! its version, serial number, signature algorithm and issuer, holds
//! `validity`, two times (`UTCTime` or `GeneralizedTime`).

/// The `(notBefore, notAfter)` of the DER certificate `der`, as seconds since
/// the Unix epoch; `None` if it cannot be read.
pub(super) fn validity(der: &[u8]) -> Option<(u64, u64)> {
    let (cert, _) = element(der, 0x30)?;
    let (mut tbs, _) = element(cert, 0x30)?;
    // The optional `[0] EXPLICIT` version.
    if tbs.first() == Some(&0xa0) {
        tbs = element(tbs, 0xa0)?.1;
    }
    let tbs = element(tbs, 0x02)?.1; // serialNumber
    let tbs = element(tbs, 0x30)?.1; // signature
    let tbs = element(tbs, 0x30)?.1; // issuer
    let (validity, _) = element(tbs, 0x30)?;
    let (from, rest) = time(validity)?;
    let (until, _) = time(rest)?;
    Some((from, until))
}

/// The content of the DER element of tag `tag` at the start of `der`, and
/// what follows it.
fn element(der: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&t, rest) = der.split_first()?;
    if t != tag {
        return None;
    }
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        rest = &rest[n..];
        len
    };
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// A `UTCTime` (`YYMMDDHHMMSSZ`, years 1950 to 2049) or `GeneralizedTime`
/// (`YYYYMMDDHHMMSSZ`) at the start of `der`, as Unix seconds.
fn time(der: &[u8]) -> Option<(u64, &[u8])> {
    let tag = *der.first()?;
    let long = match tag {
        0x17 => false,
        0x18 => true,
        _ => return None,
    };
    let (text, rest) = element(der, tag)?;
    let digits = |s: &[u8]| -> Option<u64> {
        s.iter().try_fold(0u64, |acc, &b| {
            b.is_ascii_digit().then(|| acc * 10 + u64::from(b - b'0'))
        })
    };
    let (year, at) = if long {
        (digits(text.get(..4)?)?, 4)
    } else {
        let yy = digits(text.get(..2)?)?;
        (if yy >= 50 { 1900 + yy } else { 2000 + yy }, 2)
    };
    if text.len() != at + 11 || text[at + 10] != b'Z' {
        return None;
    }
    let two = |i: usize| digits(&text[at + i..at + i + 2]);
    let (month, day, h, m, s) = (two(0)?, two(2)?, two(4)?, two(6)?, two(8)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day)?;
    Some((days * 86_400 + h * 3600 + m * 60 + s, rest))
}

/// Days from 1970-01-01 to the given date (proleptic Gregorian), for dates
/// from 1970 on.
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    let y = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn civil_days_match_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), Some(0));
        assert_eq!(days_from_civil(2000, 3, 1), Some(11_017));
        assert_eq!(days_from_civil(2024, 2, 29), Some(19_782));
        assert_eq!(days_from_civil(1969, 12, 31), None);
    }

    #[test]
    fn utc_and_generalized_times_read_as_unix_seconds() {
        // 2025-01-01T00:00:00Z and 2050-06-15T12:30:45Z.
        let mut der = vec![0x17, 13];
        der.extend_from_slice(b"250101000000Z");
        assert_eq!(time(&der).map(|t| t.0), Some(1_735_689_600));
        let mut der = vec![0x18, 15];
        der.extend_from_slice(b"20500615123045Z");
        assert_eq!(time(&der).map(|t| t.0), Some(2_538_909_045));
        // A time with a zone offset or fractions is not read.
        let mut der = vec![0x17, 17];
        der.extend_from_slice(b"250101000000+0100");
        assert_eq!(time(&der), None);
    }

    #[test]
    fn garbage_is_not_a_certificate() {
        assert_eq!(validity(b""), None);
        assert_eq!(validity(&[0x30, 0x82, 0xff]), None);
        assert_eq!(validity(&[0x30, 0x03, 0x30, 0x01, 0x00]), None);
    }
}
