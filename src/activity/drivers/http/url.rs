//! Where a request goes: URLs split into an [`Endpoint`] and a request target,
//! param `base_url`, and the `location` of a redirect.

use super::wire;
use crate::activity::drivers::db_params::masked;

/// Where a request goes: the `host:port` it names and how to reach it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Endpoint {
    /// `host[:port]` as the URL wrote it: the `host` header and the pool's key.
    pub(super) authority: String,
    /// The host to resolve (an IPv6 address without its brackets).
    pub(super) host: String,
    pub(super) port: u16,
    /// `https://`.
    pub(super) tls: bool,
}

/// `clone_from` field by field: a request rendered into a reused `Endpoint`
/// (each op's, from `base_url`'s) keeps its strings' buffers, where the
/// derived one allocates both strings anew every time.
impl Clone for Endpoint {
    fn clone(&self) -> Self {
        Self {
            authority: self.authority.clone(),
            host: self.host.clone(),
            port: self.port,
            tls: self.tls,
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.authority.clone_from(&source.authority);
        self.host.clone_from(&source.host);
        self.port = source.port;
        self.tls = source.tls;
    }
}

/// Param `base_url`, split.
#[derive(Debug, Clone)]
pub(super) struct Base {
    pub(super) ep: Endpoint,
    /// Its path, without a trailing `/` (empty for none).
    pub(super) prefix: String,
}

/// Splits an `http://` or `https://` URL into where it goes (`ep`) and its
/// request target (`target`: path and query, `/` when it has none; a fragment
/// is dropped).
///
/// Its messages show the URL with its password masked (`***`, as
/// [`masked`] writes it), and echo no piece of the authority of a URL that
/// holds an `@`: a password's raw `/`, `?` or `#` ends the authority early,
/// so `http://u:pa/ss@h/` has the authority `u:pa`, whose "port" is part of
/// the password.
pub(super) fn parse_url(url: &str, ep: &mut Endpoint, target: &mut String) -> Result<(), String> {
    let shown = || masked(url);
    // `what` quoted, or `instead` where the URL may hold a password.
    let piece = |what: &str, instead: &str| {
        if url.contains('@') {
            instead.to_string()
        } else {
            format!("`{what}`")
        }
    };
    let (rest, tls) = match scheme_of(url) {
        Some(false) => (&url[7..], false),
        Some(true) => (&url[8..], true),
        None => {
            return Err(format!(
                "`{}` is not an `http://` or `https://` URL",
                shown()
            ));
        }
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') {
        return Err(format!(
            "`{}`: credentials in a URL are not sent; set an `authorization` header",
            shown()
        ));
    }
    if authority.bytes().any(|b| b <= 0x20 || b >= 0x7f) {
        return Err(format!(
            "`{}`: the host holds a space or a character that is not ASCII",
            shown()
        ));
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((h, "")) => (h, None),
            Some((h, p)) if p.starts_with(':') => (h, Some(&p[1..])),
            _ => {
                return Err(format!(
                    "`{}`: {} is not a host",
                    shown(),
                    piece(authority, "its bracketed host")
                ));
            }
        },
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return Err(format!(
            "`{}` has no host; write `http://host:port/path`",
            shown()
        ));
    }
    let port = match port {
        None | Some("") if tls => 443,
        None | Some("") => 80,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|_| p.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                format!(
                    "`{}`: {} is not a port (0 to 65535)",
                    shown(),
                    piece(p, "its port")
                )
            })?,
    };
    ep.authority.clear();
    ep.authority.push_str(authority);
    ep.host.clear();
    ep.host.push_str(host);
    ep.port = port;
    ep.tls = tls;
    let path = path.split('#').next().unwrap_or_default();
    target.clear();
    if !path.starts_with('/') {
        target.push('/');
    }
    target.push_str(path);
    check_target(url, target)
}

/// `Some(true)` for an `https://` URL, `Some(false)` for `http://` (either in
/// any case), `None` for anything else.
pub(super) fn scheme_of(url: &str) -> Option<bool> {
    let is = |s: &str| {
        url.get(..s.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(s))
    };
    if is("http://") {
        Some(false)
    } else if is("https://") {
        Some(true)
    } else {
        None
    }
}

/// Refuses a request target that cannot go on a request line as it is
/// (`shown` is masked in the message, as [`parse_url`]'s are).
pub(super) fn check_target(shown: &str, target: &str) -> Result<(), String> {
    match wire::bad_target_byte(target) {
        None => Ok(()),
        Some((_, b)) => {
            let what = match b {
                b' ' => "a space",
                0x80.. => "a character that is not ASCII",
                _ => "a control character",
            };
            Err(format!(
                "`{}` holds {what}, which cannot be sent in a URL; percent-encode it (a space is `%20`)",
                masked(shown)
            ))
        }
    }
}

/// Checks `base_url` and splits it.
pub(super) fn check_base(s: &str) -> Result<Base, String> {
    let how = "write `http://host:port`, such as `http://127.0.0.1:8080` (or `https://`)";
    if scheme_of(s).is_none() {
        return Err(format!(
            "param `base_url`: `{}` does not start with `http://` or `https://`; {how}",
            masked(s)
        ));
    }
    let mut ep = Endpoint::default();
    let mut prefix = String::new();
    parse_url(s, &mut ep, &mut prefix).map_err(|m| format!("param `base_url`: {m}"))?;
    if prefix.contains('?') {
        return Err(format!(
            "param `base_url`: `{}` has a query; {how}",
            masked(s)
        ));
    }
    let prefix = prefix.trim_end_matches('/').to_string();
    Ok(Base { ep, prefix })
}

/// Points a request that went to `ep` and `target` at a redirect's
/// `location`, relative to where it went: a full URL, `//host/path`, `/path`,
/// `?query` or a relative path (`scratch` is reused).
pub(super) fn relocate(
    ep: &mut Endpoint,
    target: &mut String,
    scratch: &mut String,
    location: &str,
) -> Result<(), String> {
    if location.starts_with("//") {
        scratch.clear();
        scratch.push_str(if ep.tls { "https:" } else { "http:" });
        scratch.push_str(location);
        return parse_url(scratch, ep, target).map_err(|m| format!("redirected to {m}"));
    }
    if has_scheme(location) {
        return parse_url(location, ep, target).map_err(|m| format!("redirected to {m}"));
    }
    let location = location.split('#').next().unwrap_or_default();
    let current = target.split('?').next().unwrap_or_default();
    scratch.clear();
    if location.starts_with('/') {
        scratch.push_str(location);
    } else if location.starts_with('?') || location.is_empty() {
        scratch.push_str(current);
        scratch.push_str(location);
    } else {
        scratch.push_str(&current[..current.rfind('/').map_or(0, |i| i + 1)]);
        if !scratch.starts_with('/') {
            scratch.insert(0, '/');
        }
        scratch.push_str(location);
    }
    check_target(location, scratch).map_err(|m| format!("redirected to {m}"))?;
    std::mem::swap(target, scratch);
    Ok(())
}

/// Whether a URI reference starts with a scheme (`http:`, `https:`, `mailto:`):
/// letters, digits, `+`, `-` or `.` after a first letter, then `:`, before any
/// `/`, `?` or `#` (RFC 3986 §3.1), so `/login?next=http://x/` is a path.
fn has_scheme(uri: &str) -> bool {
    let Some(colon) = uri.find(':') else {
        return false;
    };
    let scheme = &uri[..colon];
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// The URL a request went to, for messages.
pub(super) fn url_of(ep: &Endpoint, target: &str) -> String {
    let scheme = if ep.tls { "https" } else { "http" };
    format!("{scheme}://{}{}", ep.authority, target)
}
