//! One entry of a Metal3 pool (`spec.pools[i]`) as written, and the range ip-address-manager
//! walks from it. Nothing here judges: `rules::metal3_pool` says what is wrong (MP1, MP2) from
//! the same [`Walk`] the reading uses, so a field the rules call broken is one the reading
//! leaves out.

use serde_json::Value;

use crate::address::{format_range, parse_cidr, parse_ip, Cidr, Family, IpRange};
use crate::model::paths::metal3 as fields;
use crate::model::read;
use crate::model::written::{self, IpText, Text, Written};

/// A `dnsServers` list as written, each entry parsed.
#[derive(Debug, Clone)]
pub struct DnsServers<'a> {
    pub list: Written<'a, &'a [Value]>,
    pub items: Vec<Written<'a, IpText<'a>>>,
}

impl<'a> DnsServers<'a> {
    pub(super) fn read(base: &'a Value, field: crate::field::FieldPath) -> Self {
        let list = written::list(base, field);
        let items = list
            .get()
            .unwrap_or_default()
            .iter()
            .map(|v| written::item(v, parse_ip))
            .collect();
        DnsServers { list, items }
    }
}

/// `spec.pools[i]` as written.
#[derive(Debug, Clone)]
pub struct EntrySpec<'a> {
    pub index: usize,
    /// `spec.pools[2]`.
    pub path: String,
    /// The entry's fields, or the value when it is not an object.
    pub fields: Result<EntryFields<'a>, &'a Value>,
}

/// The fields of one entry, and the walk they make.
#[derive(Debug, Clone)]
pub struct EntryFields<'a> {
    pub start: Written<'a, IpText<'a>>,
    pub end: Written<'a, IpText<'a>>,
    pub subnet: Written<'a, Text<'a, Cidr>>,
    /// Go's zero value, 0, means "not set" (`if pool.Prefix != 0`).
    pub prefix: Written<'a, i64>,
    /// The prefix as written, for a cause's value.
    pub prefix_value: Option<&'a Value>,
    pub gateway: Written<'a, IpText<'a>>,
    pub dns_servers: DnsServers<'a>,
    pub walk: Walk,
}

/// `start` or `end` of an entry, placed against the entry's family and subnet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Not given, or not a string (that has its own cause): the walk goes on without it.
    Absent,
    /// A string that is not an IP address.
    Unparsed,
    /// An address of another family than the entry's.
    OtherFamily,
    /// An address outside the entry's subnet.
    OutsideSubnet(Cidr),
    At(u128),
}

impl Bound {
    pub fn value(self) -> Option<u128> {
        match self {
            Bound::At(v) => Some(v),
            _ => None,
        }
    }

    /// Written, but not a place the walk can start or end at.
    fn unusable(self) -> bool {
        matches!(
            self,
            Bound::Unparsed | Bound::OtherFamily | Bound::OutsideSubnet(_)
        )
    }
}

/// What the provider would do with a walk that is missing a bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Note {
    /// A subnet and an end without a start: the whole subnet is handed out.
    EndIgnored,
    /// A start alone runs to the family's last address.
    RunsToLast(Family),
    /// An end alone hands out nothing.
    HandsOutNothing,
}

/// The walk ip-address-manager makes of an entry (`GetIPAddress` in its `api/v1alpha1`): from
/// `start` (else the subnet's network + 1) to `end` (else the subnet's last address).
#[derive(Debug, Clone, PartialEq)]
pub struct Walk {
    /// The subnet's family when given, else start's, else end's.
    pub family: Option<Family>,
    pub subnet: Option<Cidr>,
    pub start: Bound,
    pub end: Bound,
    /// Both bounds are usable and end is before start.
    pub reversed: bool,
    /// What is walked; None when the entry hands out nothing or a field is broken (a broken
    /// field leaves the entry out rather than guessing what was meant).
    pub range: Option<IpRange>,
    pub note: Option<Note>,
    /// The text a cause about the whole entry shows: the subnet, or `start-end`.
    pub text: String,
}

fn place(ip: &Written<IpText>, family: Option<Family>, subnet: Option<Cidr>) -> Bound {
    let Some(t) = ip.ok() else {
        return Bound::Absent;
    };
    match t.value() {
        None => Bound::Unparsed,
        Some(ip) if Some(ip.family) != family => Bound::OtherFamily,
        Some(ip) => match subnet {
            Some(c) if !c.network.contains(ip.value) => Bound::OutsideSubnet(c),
            _ => Bound::At(ip.value),
        },
    }
}

impl Walk {
    fn of(
        start: &Written<IpText>,
        end: &Written<IpText>,
        subnet_text: &Written<Text<Cidr>>,
    ) -> Walk {
        let subnet = subnet_text.ok().and_then(Text::value);
        let ip = |w: &Written<IpText>| w.ok().and_then(Text::value);
        let family = subnet
            .map(|c| c.family())
            .or(ip(start).map(|ip| ip.family))
            .or(ip(end).map(|ip| ip.family));
        let (s, e) = (place(start, family, subnet), place(end, family, subnet));
        let reversed = matches!((s, e), (Bound::At(s), Bound::At(e)) if s > e);
        let broken = reversed
            || s.unusable()
            || e.unusable()
            || matches!(subnet_text, Written::Ok(t) if t.value().is_none());
        let mut note = None;
        let range = match (family, s.value(), e.value(), subnet) {
            _ if broken => None,
            (Some(_), Some(s), Some(e), _) => Some(IpRange::new(s, e)),
            (Some(_), Some(s), None, Some(c)) => Some(IpRange::new(s, c.network.end)),
            (Some(_), None, e, Some(c)) => {
                if e.is_some() {
                    note = Some(Note::EndIgnored);
                }
                let first = c
                    .network
                    .start
                    .checked_add(1)
                    .filter(|v| *v <= c.network.end);
                let last = e.unwrap_or(c.network.end);
                first.filter(|f| *f <= last).map(|f| IpRange::new(f, last))
            }
            (Some(f), Some(s), None, None) => {
                note = Some(Note::RunsToLast(f));
                Some(IpRange::new(s, f.max()))
            }
            (Some(_), None, Some(_), None) => {
                note = Some(Note::HandsOutNothing);
                None
            }
            _ => None,
        };
        let text = match (text_of(subnet_text), text_of(start), text_of(end)) {
            (Some(s), None, None) => s.to_string(),
            (_, Some(s), Some(e)) => format!("{s}-{e}"),
            _ => range
                .zip(family)
                .map(|(r, f)| format_range(f, r))
                .unwrap_or_default(),
        };
        Walk {
            family,
            subnet,
            start: s,
            end: e,
            reversed,
            range,
            note,
            text,
        }
    }
}

impl EntryFields<'_> {
    /// Whether none of start, end and subnet is written as a string.
    pub fn unbounded(&self) -> bool {
        self.start.ok().is_none() && self.end.ok().is_none() && self.subnet.ok().is_none()
    }

    /// The entry's prefix when set and within its family's bound.
    pub fn prefix_len(&self) -> Option<u8> {
        prefix_len(&self.prefix, self.walk.family)
    }

    /// Whether the rules will surely find something wrong with the entry: what the reader
    /// counts towards the list's cap (`read::LIST_PROBLEMS`).
    fn flawed(&self) -> bool {
        self.unbounded()
            || self.walk.reversed
            || self.walk.start.unusable()
            || self.walk.end.unusable()
            || !reads(&self.start)
            || !reads(&self.end)
            || !reads(&self.subnet)
    }
}

/// The text of an address field written as a string.
fn text_of<'a, T>(w: &Written<'a, Text<'a, T>>) -> Option<&'a str> {
    w.ok().map(|t| t.text)
}

/// Absent, or a string that parses.
fn reads<T>(w: &Written<Text<T>>) -> bool {
    matches!(w, Written::Absent | Written::Ok(Text { parsed: Ok(_), .. }))
}

/// A Metal3 prefix: unset at 0 (Go's zero value), else within the bound of `family` (of IPv6
/// when the family is unknown).
pub fn prefix_len(raw: &Written<i64>, family: Option<Family>) -> Option<u8> {
    raw.get()
        .filter(|p| *p != 0)
        .and_then(|p| read::in_family(p, family))
}

impl<'a> EntrySpec<'a> {
    /// Entry `i` of `pools`.
    pub(super) fn read(i: usize, entry: &'a Value) -> Self {
        let fields = if entry.is_object() {
            let start = written::ip(entry, fields::ENTRY_START);
            let end = written::ip(entry, fields::ENTRY_END);
            let subnet = written::text(entry, fields::ENTRY_SUBNET, parse_cidr);
            let walk = Walk::of(&start, &end, &subnet);
            let prefix_value = fields::ENTRY_PREFIX.get(entry);
            Ok(EntryFields {
                start,
                end,
                subnet,
                prefix: written::integer_of(prefix_value),
                prefix_value,
                gateway: written::ip(entry, fields::ENTRY_GATEWAY),
                dns_servers: DnsServers::read(entry, fields::ENTRY_DNS_SERVERS),
                walk,
            })
        } else {
            Err(entry)
        };
        EntrySpec {
            index: i,
            path: fields::POOLS.index(i),
            fields,
        }
    }

    /// See [`EntryFields::flawed`]; an entry that is not an object always is.
    pub(super) fn flawed(&self) -> bool {
        self.fields.as_ref().map_or(true, EntryFields::flawed)
    }
}
