//! Requests to URLs a user supplies (webhook targets, the agent's `web_fetch`, monitor
//! URLs later) reach only public addresses: the host is resolved once, every address it
//! gives is checked, and the request then connects to exactly those addresses, so a
//! second DNS answer cannot differ (a redirect is a new hop, checked again). A setting
//! may open private addresses, never link-local or cloud-metadata ones. This module also
//! says which parts of such a URL are its secrets. It never sends anything itself.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::logged::logged;
use reqwest::Url;

/// Cloud metadata services outside the link-local range (Alibaba Cloud's, AWS's IPv6
/// one): as closed as link-local whatever the settings.
const METADATA: [IpAddr; 2] = [
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
];

/// Why a request to a user's URL was not made. The messages name the setting that
/// would allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    #[error("'{0}' is not an http(s) URL")]
    NotHttp(String),
    #[error("'{0}' has no host")]
    NoHost(String),
    /// The name did not resolve (worth another try later).
    #[error("cannot resolve host '{host}': {reason}")]
    Unresolved { host: String, reason: String },
    /// An address the policy refuses; nothing was sent.
    #[error("refused: {}, a {kind} address; {remedy}", named(.host, .address))]
    Refused {
        host: String,
        address: IpAddr,
        kind: &'static str,
        remedy: String,
    },
}

/// `10.0.0.5`, or `hooks.internal (10.0.0.5)` for a name.
fn named(host: &str, address: &IpAddr) -> String {
    if host == address.to_string() {
        host.to_string()
    } else {
        format!("{host} ({address})")
    }
}

/// One address or network of an allow-list (`10.0.0.5`, `192.168.1.0/24`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    address: IpAddr,
    prefix: u8,
}

impl Network {
    /// Reads `address` or `address/prefix`; `None` when it is neither.
    pub fn parse(text: &str) -> Option<Network> {
        let (address, prefix) = match text.trim().split_once('/') {
            Some((address, prefix)) => (address, Some(prefix.parse::<u8>().ok()?)),
            None => (text.trim(), None),
        };
        let address = address.parse::<IpAddr>().ok()?.to_canonical();
        let bits = if address.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(bits);
        (prefix <= bits).then_some(Network { address, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let mask = |bits: u32| -> u128 {
            match u32::from(self.prefix) {
                0 => 0,
                n => (u128::MAX << (bits - n)) & (u128::MAX >> (128 - bits)),
            }
        };
        match (self.address, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let m = mask(32);
                u128::from(u32::from(net)) & m == u128::from(u32::from(ip)) & m
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let m = mask(128);
                u128::from(net) & m == u128::from(ip) & m
            }
            _ => false,
        }
    }
}

/// Which addresses requests to users' URLs may reach.
#[derive(Debug, Clone)]
pub struct AddressPolicy {
    /// Private, loopback and other non-public addresses are allowed (link-local and
    /// cloud metadata stay closed).
    allow_private: bool,
    /// Addresses and networks allowed whatever they are.
    allowed: Vec<Network>,
    /// What a refusal tells the user to set to allow it.
    remedy: Remedy,
}

/// What a refusal ends with: the setting that would open the address refused.
#[derive(Debug, Clone)]
pub struct Remedy {
    /// For a loopback, private or other non-public address.
    pub private: String,
    /// For a link-local or cloud-metadata address, which `allow_private` never opens.
    pub link_local: String,
}

/// Which door a request to a user's URL goes through; it names the refusal's settings.
#[derive(Debug, Clone, Copy)]
pub enum Door {
    Webhook,
    MonitorUrl,
}

impl AddressPolicy {
    /// `allow_private` opens non-public addresses; `remedy` is what a refusal ends with
    /// (the setting that would allow it, by the kind of address).
    pub fn new(allow_private: bool, allowed: Vec<Network>, remedy: Remedy) -> Self {
        AddressPolicy {
            allow_private,
            allowed,
            remedy,
        }
    }

    /// Webhook targets or monitor URLs (`door`), by config.yaml's `delivery:`; an
    /// allow-list entry that is not an address or network is logged and left out.
    pub fn for_delivery(section: &crate::config::DeliverySection, door: Door) -> AddressPolicy {
        let allowed = section
            .allowed_private_targets
            .iter()
            .filter_map(|entry| {
                let network = Network::parse(entry);
                if network.is_none() {
                    tracing::warn!(
                        "delivery.allowed_private_targets: '{}' is not an address or a network (e.g. 10.0.0.5, 192.168.1.0/24); left out",
                        logged(entry)
                    );
                }
                network
            })
            .collect();
        let (only_public, reach) = match door {
            Door::Webhook => ("webhooks go to public addresses only", "send to"),
            Door::MonitorUrl => (
                "monitor URLs are fetched from public addresses only",
                "fetch",
            ),
        };
        let remedy = Remedy {
            private: format!(
                "{only_public}; to {reach} this one, set delivery.allow_private_targets: true \
                 (or list it under delivery.allowed_private_targets) in config.yaml"
            ),
            link_local: format!(
                "{only_public}, and delivery.allow_private_targets never opens this kind: \
                 to {reach} this one, list it under delivery.allowed_private_targets in \
                 config.yaml"
            ),
        };
        AddressPolicy::new(section.allow_private_targets == Some(true), allowed, remedy)
    }

    /// `Err` with the kind of address when `ip` may not be reached.
    pub fn check(&self, ip: IpAddr) -> Result<(), &'static str> {
        let ip = ip.to_canonical();
        if self.allowed.iter().any(|n| n.contains(ip)) {
            return Ok(());
        }
        match kind_of(ip) {
            None => Ok(()),
            Some(kind @ ("link-local" | "cloud metadata")) => Err(kind),
            Some(_) if self.allow_private => Ok(()),
            Some(kind) => Err(kind),
        }
    }

    /// The addresses to connect to for `url`, each one checked: an address literal
    /// (`127.0.0.1`, `[::1]`, `0x7f000001`, which the URL reader turns into
    /// `127.0.0.1`), or every address the host name resolves to. Any refused address
    /// refuses the whole host (a name that answers public and private addresses at
    /// once is rebinding bait).
    pub async fn addresses(&self, url: &Url) -> Result<Vec<SocketAddr>, OutboundError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(OutboundError::NotHttp(url.to_string()));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let (host, addresses) = match literal(url) {
            Err(()) => return Err(OutboundError::NoHost(url.to_string())),
            Ok(Some(ip)) => (ip.to_string(), vec![SocketAddr::new(ip, port)]),
            Ok(None) => {
                let name = url.host_str().unwrap_or("");
                let resolved = tokio::net::lookup_host((name, port)).await;
                let addresses: Vec<SocketAddr> = resolved
                    .map_err(|e| OutboundError::Unresolved {
                        host: name.to_string(),
                        reason: e.to_string(),
                    })?
                    .collect();
                if addresses.is_empty() {
                    return Err(OutboundError::Unresolved {
                        host: name.to_string(),
                        reason: "no address".into(),
                    });
                }
                (name.to_string(), addresses)
            }
        };
        for address in &addresses {
            if let Err(kind) = self.check(address.ip()) {
                return Err(OutboundError::Refused {
                    host,
                    address: address.ip(),
                    kind,
                    remedy: match kind {
                        "link-local" | "cloud metadata" => self.remedy.link_local.clone(),
                        _ => self.remedy.private.clone(),
                    },
                });
            }
        }
        Ok(addresses)
    }
}

/// The address `url` names literally (`Ok(None)` for a host name; `Err` for none).
/// The URL reader has already turned every spelling of an IPv4 address (`0x7f000001`,
/// `2130706433`, `0177.0.0.1`) into the dotted one.
fn literal(url: &Url) -> Result<Option<IpAddr>, ()> {
    let host = url.host_str().filter(|h| !h.is_empty()).ok_or(())?;
    Ok(host.trim_matches(['[', ']']).parse::<IpAddr>().ok())
}

/// Pins `builder`'s connections to `url`'s host to the `addresses` checked for it.
pub fn pinned(
    builder: reqwest::ClientBuilder,
    url: &Url,
    addresses: &[SocketAddr],
) -> reqwest::ClientBuilder {
    match (literal(url), url.host_str()) {
        (Ok(None), Some(name)) => builder.resolve_to_addrs(name, addresses),
        // An address literal is connected to as written: nothing to resolve.
        _ => builder,
    }
}

/// What kind of non-public address `ip` is; `None` for a public one.
pub fn kind_of(ip: IpAddr) -> Option<&'static str> {
    let ip = ip.to_canonical();
    if METADATA.contains(&ip) {
        return Some("cloud metadata");
    }
    match ip {
        IpAddr::V4(v4) => kind_of_v4(v4),
        IpAddr::V6(v6) => kind_of_v6(v6),
    }
}

fn kind_of_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, ..) => "unspecified",
        (127, ..) => "loopback",
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => "private",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared (CGNAT)",
        (192, 0, 0) => "reserved",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (192, 88, 99) => "reserved",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, ..) => "multicast",
        (240..=255, ..) => "reserved",
        _ => return None,
    })
}

fn kind_of_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    // Forms that carry an IPv4 address: judged by it.
    let embedded = |high: u16, low: u16| {
        Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8)
    };
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return kind_of_v4(embedded(s[6], s[7])); // NAT64
    }
    if s[0] == 0x2002 {
        return kind_of_v4(embedded(s[1], s[2])); // 6to4
    }
    Some(if ip.is_unspecified() {
        "unspecified"
    } else if ip.is_loopback() {
        "loopback"
    } else if s[..6] == [0; 6] {
        "reserved" // IPv4-compatible, deprecated
    } else if (s[0] & 0xfe00) == 0xfc00 {
        "unique-local"
    } else if (s[0] & 0xffc0) == 0xfe80 {
        "link-local"
    } else if (s[0] & 0xffc0) == 0xfec0 {
        "site-local"
    } else if (s[0] & 0xff00) == 0xff00 {
        "multicast"
    } else if s[0] == 0x2001 && s[1] == 0x0db8 || (s[0] & 0xfff0) == 0x3ff0 {
        "documentation"
    } else if s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 1 {
        "private" // local-use NAT64
    } else if s[..4] == [0x100, 0, 0, 0] || (s[0] == 0x2001 && s[1] < 0x200) {
        // Discard-only; IETF protocol assignments (Teredo, benchmarking, ORCHID).
        "reserved"
    } else {
        return None;
    })
}

/// The parts of `url` that are its secrets: the password, path segments
/// that look like tokens (8 characters or more with a digit, or 16 or more), and query
/// values of 4 characters or more; each as written and percent-decoded.
pub fn url_secrets(url: &str) -> Vec<String> {
    let Ok(parsed) = Url::parse(url) else {
        return Vec::new();
    };
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    let mut secrets = Vec::new();
    let mut keep = |text: &str, min: usize| {
        for form in [text.to_string(), decode(text)] {
            if form.chars().count() >= min && !secrets.contains(&form) {
                secrets.push(form);
            }
        }
    };
    if let Some(password) = parsed.password() {
        keep(password, 1);
    }
    for segment in parsed.path_segments().into_iter().flatten() {
        let long = segment.chars().count();
        if long >= 16 || (long >= 8 && segment.chars().any(|c| c.is_ascii_digit())) {
            keep(segment, 8);
        }
    }
    for pair in parsed.query().unwrap_or("").split('&') {
        if let Some((_, value)) = pair.split_once('=') {
            keep(value, 4);
        }
    }
    // The longest first, so a secret that contains another is masked whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets
}

/// `text` with the secrets of `url` ([`url_secrets`]) masked as `[REDACTED]`.
pub fn redact_url_secrets(url: &str, text: &str) -> String {
    url_secrets(url)
        .iter()
        .fold(text.to_string(), |text, secret| {
            text.replace(secret.as_str(), "[REDACTED]")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow_private: bool, allowed: &[&str]) -> AddressPolicy {
        let allowed = allowed.iter().filter_map(|n| Network::parse(n)).collect();
        let remedy = Remedy {
            private: "set it".into(),
            link_local: "list it".into(),
        };
        AddressPolicy::new(allow_private, allowed, remedy)
    }

    #[test]
    fn only_public_addresses_pass_by_default() {
        for (ip, kind) in [
            ("127.0.0.1", "loopback"),
            ("10.1.2.3", "private"),
            ("172.31.0.1", "private"),
            ("192.168.0.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.100.100.200", "cloud metadata"),
            ("100.64.0.1", "shared (CGNAT)"),
            ("0.0.0.0", "unspecified"),
            ("198.18.0.1", "benchmarking"),
            ("192.0.2.1", "documentation"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("64:ff9b::a00:1", "private"),
            ("2002:7f00:1::", "loopback"),
            ("fd00::1", "unique-local"),
            ("fd00:ec2::254", "cloud metadata"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("2001::1", "reserved"),
            ("::7f00:1", "reserved"),
        ] {
            assert_eq!(kind_of(ip.parse().unwrap()), Some(kind), "{ip}");
            assert_eq!(policy(false, &[]).check(ip.parse().unwrap()), Err(kind));
        }
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1",
            "64:ff9b::5db8:d822",
        ] {
            assert_eq!(kind_of(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn the_opt_in_opens_private_addresses_but_never_link_local_or_metadata() {
        let open = policy(true, &[]);
        for ip in ["127.0.0.1", "10.0.0.5", "::1", "fd12::1"] {
            assert_eq!(open.check(ip.parse().unwrap()), Ok(()), "{ip}");
        }
        for ip in ["169.254.169.254", "100.100.100.200", "fe80::1"] {
            assert!(open.check(ip.parse().unwrap()).is_err(), "{ip}");
        }
        let listed = policy(false, &["10.0.0.0/8", "192.168.1.7", "fd00::/8"]);
        for ip in ["10.9.9.9", "192.168.1.7", "::ffff:10.0.0.1", "fd00::9"] {
            assert_eq!(listed.check(ip.parse().unwrap()), Ok(()), "{ip}");
        }
        for ip in ["192.168.1.8", "127.0.0.1", "fe80::1"] {
            assert!(listed.check(ip.parse().unwrap()).is_err(), "{ip}");
        }
        assert_eq!(Network::parse("10.0.0.0/33"), None);
        assert_eq!(Network::parse("example.com"), None);
        assert!(Network::parse("0.0.0.0/0").is_some_and(|n| n.contains("8.8.8.8".parse().unwrap())));
    }

    #[tokio::test]
    async fn address_literals_in_every_spelling_are_checked_before_any_lookup() {
        let strict = policy(false, &[]);
        for url in [
            "http://127.0.0.1:9/hook",
            "http://0x7f000001:9/hook",
            "http://2130706433/hook",
            "http://0177.0.0.1/hook",
            "http://[::1]:9/hook",
            "http://[::ffff:7f00:1]/hook",
            "http://169.254.169.254/latest/meta-data/",
            "http://localhost:9/hook",
        ] {
            let parsed = Url::parse(url).unwrap();
            match strict.addresses(&parsed).await {
                Err(OutboundError::Refused { kind, .. }) => {
                    assert!(["loopback", "link-local"].contains(&kind), "{url}: {kind}")
                }
                other => panic!("{url}: {other:?}"),
            }
        }
        let ftp = Url::parse("ftp://example.com/").unwrap();
        assert!(matches!(
            strict.addresses(&ftp).await,
            Err(OutboundError::NotHttp(_))
        ));
    }

    #[test]
    fn a_urls_own_secrets_are_masked_in_what_comes_back() {
        let url = "https://user:pa55@hooks.example/services/T0123ABCD/hooks/s3cr3t-T0k3n%2Fx?sig=abcd1234&v=1";
        let echoed = "403: bad sig abcd1234 for /services/T0123ABCD/hooks/s3cr3t-T0k3n/x (user pa55); see /services/docs";
        assert_eq!(
            redact_url_secrets(url, echoed),
            "403: bad sig [REDACTED] for /services/[REDACTED]/hooks/[REDACTED] (user [REDACTED]); see /services/docs"
        );
    }
}
