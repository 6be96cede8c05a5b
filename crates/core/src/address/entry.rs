//! What a field's text turned out to mean: an entry (IP, range or CIDR), a CIDR as written,
//! the forms a field takes, and a value with its warnings.

use std::fmt;

use super::ip::{Family, Ip, IpRange};
use super::set::AddrSet;

// === Entries ===

/// How an entry was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryForm {
    Ip,
    Range,
    Cidr { prefix: u8 },
}

/// A parsed address entry: the range it covers (for a CIDR, the masked network) and its form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub family: Family,
    pub range: IpRange,
    pub form: EntryForm,
}

impl Entry {
    /// The entry as a one-run set.
    pub(crate) fn to_set(self) -> AddrSet {
        AddrSet::from_range(self.family, self.range)
    }
}

impl fmt::Display for Entry {
    /// The canonical text, see [`canonical_entry_text`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let start = Ip::new(self.family, self.range.start);
        match self.form {
            EntryForm::Ip => write!(f, "{start}"),
            EntryForm::Range => write!(f, "{start}-{}", Ip::new(self.family, self.range.end)),
            EntryForm::Cidr { prefix } => write!(f, "{start}/{prefix}"),
        }
    }
}

/// The canonical way to write an entry: `ip`, `a-b` or `network/prefix`.
pub fn canonical_entry_text(e: &Entry) -> String {
    e.to_string()
}

/// A CIDR as written: the address before `/` (host bits and all), the prefix, and the masked
/// network it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    pub ip: Ip,
    pub prefix: u8,
    pub network: IpRange,
}

impl Cidr {
    /// The family of the address.
    pub fn family(&self) -> Family {
        self.ip.family
    }

    /// The network address (the masked `ip`).
    pub(crate) fn network_ip(&self) -> Ip {
        Ip::new(self.ip.family, self.network.start)
    }

    /// Whether the address has bits set below the prefix.
    pub(crate) fn has_host_bits(&self) -> bool {
        self.ip.value != self.network.start
    }

    /// The CIDR as an entry.
    pub fn entry(&self) -> Entry {
        Entry {
            family: self.ip.family,
            range: self.network,
            form: EntryForm::Cidr {
                prefix: self.prefix,
            },
        }
    }
}

impl fmt::Display for Cidr {
    /// The canonical text of the network it means: `10.0.0.0/24` for `10.0.0.1/24`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network_ip(), self.prefix)
    }
}

/// The forms of entry a field accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Forms {
    pub ip: bool,
    pub range: bool,
    pub cidr: bool,
}

impl Forms {
    /// A single IP, a range or a CIDR (pool entries).
    pub const ALL: Forms = Forms {
        ip: true,
        range: true,
        cidr: true,
    };
    /// A single IP only (addresses, gateways).
    pub const IP: Forms = Forms {
        ip: true,
        range: false,
        cidr: false,
    };
    /// A single IP or a range (Spiderpool `ips`).
    pub const IP_OR_RANGE: Forms = Forms {
        ip: true,
        range: true,
        cidr: false,
    };
    /// A CIDR only (subnets).
    pub const CIDR: Forms = Forms {
        ip: false,
        range: false,
        cidr: true,
    };

    pub(super) fn allows(self, kind: FormKind) -> bool {
        match kind {
            FormKind::Ip => self.ip,
            FormKind::Range => self.range,
            FormKind::Cidr => self.cidr,
        }
    }

    fn kinds(self) -> impl Iterator<Item = FormKind> {
        [FormKind::Ip, FormKind::Range, FormKind::Cidr]
            .into_iter()
            .filter(move |k| self.allows(*k))
    }

    /// `IP address, range or CIDR`, as in `not a valid …`.
    pub(super) fn noun(self) -> String {
        let words: Vec<&str> = self
            .kinds()
            .map(|k| match k {
                FormKind::Ip => "IP address",
                FormKind::Range => "range",
                FormKind::Cidr => "CIDR",
            })
            .collect();
        if words.is_empty() {
            "address".to_owned()
        } else {
            join_or(&words)
        }
    }

    /// `an IP address, a range or a CIDR`, as in `expected …`.
    pub(super) fn described(self) -> String {
        let words: Vec<&str> = self
            .kinds()
            .map(|k| match k {
                FormKind::Ip => "an IP address",
                FormKind::Range => "a range",
                FormKind::Cidr => "a CIDR",
            })
            .collect();
        if words.is_empty() {
            "nothing".to_owned()
        } else {
            join_or(&words)
        }
    }
}

fn join_or(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The shape an entry was written in, before it is known to be valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormKind {
    Ip,
    Range,
    Cidr,
}

impl fmt::Display for FormKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FormKind::Ip => "a single IP address",
            FormKind::Range => "a range",
            FormKind::Cidr => "a CIDR",
        })
    }
}

/// Which end of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RangeBound {
    Start,
    End,
}

impl fmt::Display for RangeBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RangeBound::Start => "start",
            RangeBound::End => "end",
        })
    }
}

/// A value plus non-fatal findings (the rules' warnings), each a full sentence a kubectl user reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<T> {
    pub value: T,
    pub warnings: Vec<String>,
}

impl<T> Parsed<T> {
    /// Keeps the warnings, maps the value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Parsed<U> {
        Parsed {
            value: f(self.value),
            warnings: self.warnings,
        }
    }
}
