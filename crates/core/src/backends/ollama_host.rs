//! Where the Ollama server is: `OLLAMA_HOST` read the way the Ollama CLI reads it
//! (`envconfig.Host()` in ollama/ollama), so a value that works for `ollama run` works here.
//! One addition: a user and password before the host (`http://user:pw@host:port`, for a server
//! behind a proxy that asks for them), which the CLI mangles into the host name, are kept apart,
//! sent as HTTP basic authentication, and never shown ([`OllamaHost::shown_url`]).

use std::net::IpAddr;

/// The base URL when `OLLAMA_HOST` is unset or blank.
pub const DEFAULT_BASE_URL: &str = "http://localhost:11434";

/// Ollama's own port, used when the value names none (and no `http://` / `https://` scheme).
const OLLAMA_PORT: u16 = 11434;

/// A parsed `OLLAMA_HOST`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OllamaHost {
    /// As written (`http` when the value has no `://`); the Ollama CLI does not lowercase it.
    pub scheme: String,
    /// A name or an IP address, without IPv6 brackets; never empty.
    pub host: String,
    pub port: u16,
    /// Path prefix for a server behind a reverse proxy, without leading or trailing `/`.
    pub path: String,
    /// `user:password` (or a token alone) written before the host, without its `@`.
    pub userinfo: Option<String>,
}

impl OllamaHost {
    /// Reads a value as `envconfig.Host()` does. Never fails: like the CLI, anything it cannot
    /// make sense of falls back to a default (an invalid port becomes the scheme's default port).
    pub fn parse(value: &str) -> OllamaHost {
        let value = clean(value);
        let (scheme, hostport, default_port) = match value.split_once("://") {
            // The CLI treats a bare `ollama.com` as its hosted service.
            None if value == "ollama.com" => ("https", "ollama.com:443", 443),
            None => ("http", value, OLLAMA_PORT),
            Some(("http", rest)) => ("http", rest, 80),
            Some(("https", rest)) => ("https", rest, 443),
            Some((scheme, rest)) => (scheme, rest, OLLAMA_PORT),
        };
        let (hostport, path) = hostport.split_once('/').unwrap_or((hostport, ""));
        let (userinfo, hostport) = match hostport.rsplit_once('@') {
            Some((userinfo, hostport)) => (Some(userinfo.to_string()), hostport),
            None => (None, hostport),
        };
        let (host, port) = match split_host_port(hostport) {
            Some((host, port)) => (host.to_string(), parse_port(port).unwrap_or(default_port)),
            None => {
                let host = match canonical_ip(hostport.trim_matches(['[', ']'])) {
                    Some(ip) => ip,
                    None => hostport.to_string(),
                };
                (host, default_port)
            }
        };
        OllamaHost {
            scheme: scheme.to_string(),
            // The CLI leaves an empty host (`:1234`) to the dialer, which then means this machine.
            host: if host.is_empty() {
                "127.0.0.1".to_string()
            } else {
                host
            },
            port,
            path: path.trim_matches('/').to_string(),
            userinfo,
        }
    }

    /// The URL requests go to: [`Self::base_url`] with the user and password, which reqwest
    /// sends as basic authentication. Never shown.
    pub fn request_url(&self) -> String {
        self.render(self.userinfo.as_deref())
    }

    /// The URL as messages and reports show it: the user and password masked.
    pub fn shown_url(&self) -> String {
        self.render(self.userinfo.as_ref().map(|_| crate::secrets::MASKED))
    }

    /// `scheme://host:port[/path]`, no trailing `/`: the prefix of every API URL and the
    /// `<host>` of the "not reachable" message.
    pub fn base_url(&self) -> String {
        self.render(None)
    }

    fn render(&self, userinfo: Option<&str>) -> String {
        let scheme = &self.scheme;
        let userinfo = userinfo
            .map(|userinfo| format!("{userinfo}@"))
            .unwrap_or_default();
        let mut url = if self.host.contains(':') {
            format!("{scheme}://{userinfo}[{}]:{}", self.host, self.port)
        } else {
            format!("{scheme}://{userinfo}{}:{}", self.host, self.port)
        };
        if !self.path.is_empty() {
            url.push('/');
            url.push_str(&self.path);
        }
        url
    }
}

/// The server a value of `OLLAMA_HOST` (from the relay's child environment) names: `None` when
/// it names none (unset or blank), which means [`DEFAULT_BASE_URL`].
pub fn from_env(ollama_host: Option<&str>) -> Option<OllamaHost> {
    ollama_host
        .filter(|value| !clean(value).is_empty())
        .map(OllamaHost::parse)
}

/// The base URL for a value of `OLLAMA_HOST`, without any user and password.
pub fn base_url(ollama_host: Option<&str>) -> String {
    from_env(ollama_host).map_or_else(|| DEFAULT_BASE_URL.to_string(), |host| host.base_url())
}

/// Where requests go for a value of `OLLAMA_HOST` ([`OllamaHost::request_url`]).
pub fn request_url(ollama_host: Option<&str>) -> String {
    from_env(ollama_host).map_or_else(|| DEFAULT_BASE_URL.to_string(), |host| host.request_url())
}

/// How messages show the server a value of `OLLAMA_HOST` names ([`OllamaHost::shown_url`]).
pub fn shown_url(ollama_host: Option<&str>) -> String {
    from_env(ollama_host).map_or_else(|| DEFAULT_BASE_URL.to_string(), |host| host.shown_url())
}

/// Spaces, then quotes, then spaces again, as the CLI strips them (`envconfig.Var` + `Host`).
/// Rust's `trim` and Go's `TrimSpace` both remove Unicode `White_Space`.
fn clean(value: &str) -> &str {
    value.trim().trim_matches(['"', '\'']).trim()
}

/// Go's `net.SplitHostPort`: `None` where it returns an error (no port, stray brackets, or
/// more than one colon outside brackets).
fn split_host_port(hostport: &str) -> Option<(&str, &str)> {
    let last_colon = hostport.rfind(':')?;
    let (host, rest_from) = if let Some(inner) = hostport.strip_prefix('[') {
        let close = inner.find(']')? + 1;
        // The `]` must be followed by the last colon and nothing else before it.
        if close + 1 != last_colon {
            return None;
        }
        (&hostport[1..close], close + 1)
    } else {
        let host = &hostport[..last_colon];
        if host.contains(':') {
            return None;
        }
        (host, 0)
    };
    let bracket_from = usize::from(hostport.starts_with('['));
    if hostport[bracket_from..].contains('[') || hostport[rest_from..].contains(']') {
        return None;
    }
    Some((host, &hostport[last_colon + 1..]))
}

/// Go's `strconv.ParseInt(port, 10, 32)` followed by the CLI's 0..=65535 check.
fn parse_port(port: &str) -> Option<u16> {
    let (negative, digits) = match port.as_bytes().first() {
        Some(b'-') => (true, &port[1..]),
        Some(b'+') => (false, &port[1..]),
        _ => (false, port),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Leading zeros are fine for Go, so compare the value rather than the length.
    let value = digits.trim_start_matches('0');
    if value.is_empty() {
        return Some(0);
    }
    if negative {
        return None;
    }
    value.parse::<u16>().ok()
}

/// Go's `net.ParseIP(s).String()`: IPv4-mapped IPv6 addresses print as IPv4.
fn canonical_ip(text: &str) -> Option<String> {
    match text.parse::<IpAddr>().ok()? {
        IpAddr::V4(ip) => Some(ip.to_string()),
        IpAddr::V6(ip) => Some(match ip.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => ip.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ollama_host_like_the_ollama_cli() {
        // The first rows are ollama/ollama's own `TestHost` table; an empty host becomes
        // 127.0.0.1 (Go leaves it empty and its dialer picks this machine).
        let table = [
            ("", "http://127.0.0.1:11434"),
            ("1.2.3.4", "http://1.2.3.4:11434"),
            (":1234", "http://127.0.0.1:1234"),
            ("1.2.3.4:1234", "http://1.2.3.4:1234"),
            ("example.com", "http://example.com:11434"),
            ("example.com:1234", "http://example.com:1234"),
            (":0", "http://127.0.0.1:0"),
            (":66000", "http://127.0.0.1:11434"),
            (":-1", "http://127.0.0.1:11434"),
            ("[::1]", "http://[::1]:11434"),
            ("[::]", "http://[::]:11434"),
            ("::1", "http://[::1]:11434"),
            ("[::1]:1337", "http://[::1]:1337"),
            (" 1.2.3.4 ", "http://1.2.3.4:11434"),
            ("\"1.2.3.4\"", "http://1.2.3.4:11434"),
            (" \" 1.2.3.4 \" ", "http://1.2.3.4:11434"),
            ("'1.2.3.4'", "http://1.2.3.4:11434"),
            ("http://1.2.3.4", "http://1.2.3.4:80"),
            ("http://1.2.3.4:4321", "http://1.2.3.4:4321"),
            ("https://1.2.3.4", "https://1.2.3.4:443"),
            ("https://1.2.3.4:4321", "https://1.2.3.4:4321"),
            (
                "https://example.com/ollama",
                "https://example.com:443/ollama",
            ),
            ("ollama.com", "https://ollama.com:443"),
            // The examples of docs/BACKENDS.md §5 and more edges.
            ("127.0.0.1:9000", "http://127.0.0.1:9000"),
            ("0.0.0.0", "http://0.0.0.0:11434"),
            ("https://h", "https://h:443"),
            ("http://h:1234/", "http://h:1234"),
            ("h:1234/ollama/", "http://h:1234/ollama"),
            ("h//x/", "http://h:11434/x"),
            ("h:80x", "http://h:11434"),
            ("h:+80", "http://h:80"),
            ("h:0080", "http://h:80"),
            ("h:-0", "http://h:0"),
            ("h:", "http://h:11434"),
            ("https://h:99999", "https://h:443"),
            ("ftp://h", "ftp://h:11434"),
            ("::ffff:1.2.3.4", "http://1.2.3.4:11434"),
            ("[0:0::1]", "http://[::1]:11434"),
            ("[::1]:x", "http://[::1]:11434"),
            ("[::1", "http://[::1]:11434"),
            ("a:b:c", "http://[a:b:c]:11434"),
            ("[h]x:1", "http://[[h]x:1]:11434"),
            ("\u{3000}localhost:8080\n", "http://localhost:8080"),
        ];
        for (value, expected) in table {
            assert_eq!(OllamaHost::parse(value).base_url(), expected, "{value:?}");
        }
    }

    #[test]
    fn unset_or_blank_means_localhost() {
        assert_eq!(base_url(None), DEFAULT_BASE_URL);
        assert_eq!(base_url(Some("")), DEFAULT_BASE_URL);
        assert_eq!(base_url(Some("  ")), DEFAULT_BASE_URL);
        assert_eq!(base_url(Some("\"\"")), DEFAULT_BASE_URL);
        assert_eq!(base_url(Some("127.0.0.1:9000")), "http://127.0.0.1:9000");
    }

    #[test]
    fn keeps_the_parts_apart() {
        let parsed = OllamaHost::parse("https://[::1]:8443/proxy/ollama/");
        assert_eq!(
            parsed,
            OllamaHost {
                scheme: "https".into(),
                host: "::1".into(),
                port: 8443,
                path: "proxy/ollama".into(),
                userinfo: None,
            }
        );
    }

    #[test]
    fn keeps_a_user_and_password_apart_and_never_shows_them() {
        let cases = [
            (
                "http://user:PW@127.0.0.1:9",
                "user:PW",
                "http://127.0.0.1:9",
            ),
            ("user:PW@host:9", "user:PW", "http://host:9"),
            ("https://:PW@[::1]:9/x", ":PW", "https://[::1]:9/x"),
            ("http://TOKEN@host:1234", "TOKEN", "http://host:1234"),
            ("http://u:p@ss@h:1", "u:p@ss", "http://h:1"),
        ];
        for (value, userinfo, base) in cases {
            let parsed = OllamaHost::parse(value);
            assert_eq!(parsed.userinfo.as_deref(), Some(userinfo), "{value}");
            assert_eq!(parsed.base_url(), base, "{value}");
            let (scheme, rest) = base.split_once("://").unwrap_or_default();
            assert_eq!(
                shown_url(Some(value)),
                format!("{scheme}://********@{rest}")
            );
            assert_eq!(
                request_url(Some(value)),
                format!("{scheme}://{userinfo}@{rest}")
            );
            assert!(!shown_url(Some(value)).contains("PW"));
        }
        assert_eq!(shown_url(None), DEFAULT_BASE_URL);
        assert_eq!(shown_url(Some("h:1")), "http://h:1");
    }

    #[test]
    fn splits_host_and_port_like_go() {
        assert_eq!(split_host_port("h:1"), Some(("h", "1")));
        assert_eq!(split_host_port("[::1]:1"), Some(("::1", "1")));
        assert_eq!(split_host_port(":1"), Some(("", "1")));
        assert_eq!(split_host_port("h"), None);
        assert_eq!(split_host_port("[::1]"), None);
        assert_eq!(split_host_port("::1"), None);
        assert_eq!(split_host_port("[::1]:1:2"), None);
        assert_eq!(split_host_port("[h]x:1"), None);
        assert_eq!(split_host_port("h]:1"), None);
        assert_eq!(split_host_port("h[:1"), None);
        assert_eq!(split_host_port("[[h]:1"), None);
    }
}
