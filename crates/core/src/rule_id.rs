//! Rule ids as a type: every id ipam-guard reports, with what it does to a write and whether it
//! reads other objects through the view. A new view-reading rule cannot be added without saying
//! so here (the matches are exhaustive), and readiness (X3), the decider's share of a verdict
//! (X2) and the answer to view-dependent requests while the view is unsynced all follow from it.
//! Bottom layer: no I/O, no other module.

use std::fmt;

/// What a rule does to a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Refuses the write.
    Deny,
    /// Allows the write with a warning.
    Warn,
    /// Refuses some writes and warns about others (the summary says which).
    DenyOrWarn,
    /// Fills absent fields through the mutating webhook.
    Mutate,
    /// Lets a write through that other rules would refuse.
    Allow,
    /// Reported by `ipam-guard check` only.
    CheckOnly,
    /// Reported by `ipam-guard audit` and the periodic audit only: the state of stored objects
    /// over time (a claim stuck, an address left behind), never a verdict on a write.
    AuditOnly,
}

impl Effect {
    pub fn label(self) -> &'static str {
        match self {
            Effect::Deny => "deny",
            Effect::Warn => "warn",
            Effect::DenyOrWarn => "deny or warn",
            Effect::Mutate => "mutate",
            Effect::Allow => "allow",
            Effect::CheckOnly => "check only",
            Effect::AuditOnly => "audit only",
        }
    }
}

/// One rule id. Ordered and compared by its text, so sorted lists read as they always have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleId {
    C1,
    C2,
    C3,
    C4,
    C5,
    A1,
    A2,
    A3,
    A4,
    A5,
    A6,
    A7,
    A8,
    A9,
    A10,
    R1,
    P1,
    P2,
    P3,
    P4,
    P5,
    P6,
    P7,
    P8,
    P9,
    P10,
    P11,
    PP1,
    PP2,
    PP3,
    PP4,
    PP5,
    PP6,
    PP7,
    MP1,
    MP2,
    MP3,
    MP4,
    MP5,
    MC1,
    MC2,
    MC3,
    MC4,
    MA1,
    MA2,
    MA3,
    MA4,
    MA5,
    MD1,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    S8,
    S9,
    S10,
    S11,
    S12,
    CP1,
    CP2,
    CP3,
    CP4,
    CP5,
    RI1,
    RI2,
    RI3,
    RI4,
    RI5,
    RI6,
    SA1,
    SA2,
    SA3,
    V1,
    M1,
    M2,
    K1,
    REQ,
    X3,
    X4,
    E1,
    H1,
    H2,
    H3,
    /// An id this build does not know, as a decider of another version wrote it (X2 across
    /// replicas): shown as written so the user still sees which rule spoke.
    Foreign(&'static str),
}

impl RuleId {
    /// Every id this build reports, in catalogue order.
    pub const ALL: [RuleId; 86] = [
        RuleId::C1,
        RuleId::C2,
        RuleId::C3,
        RuleId::C4,
        RuleId::C5,
        RuleId::A1,
        RuleId::A2,
        RuleId::A3,
        RuleId::A4,
        RuleId::A5,
        RuleId::A6,
        RuleId::A7,
        RuleId::A8,
        RuleId::A9,
        RuleId::A10,
        RuleId::R1,
        RuleId::P1,
        RuleId::P2,
        RuleId::P3,
        RuleId::P4,
        RuleId::P5,
        RuleId::P6,
        RuleId::P7,
        RuleId::P8,
        RuleId::P9,
        RuleId::P10,
        RuleId::P11,
        RuleId::PP1,
        RuleId::PP2,
        RuleId::PP3,
        RuleId::PP4,
        RuleId::PP5,
        RuleId::PP6,
        RuleId::PP7,
        RuleId::MP1,
        RuleId::MP2,
        RuleId::MP3,
        RuleId::MP4,
        RuleId::MP5,
        RuleId::MC1,
        RuleId::MC2,
        RuleId::MC3,
        RuleId::MC4,
        RuleId::MA1,
        RuleId::MA2,
        RuleId::MA3,
        RuleId::MA4,
        RuleId::MA5,
        RuleId::MD1,
        RuleId::S1,
        RuleId::S2,
        RuleId::S3,
        RuleId::S4,
        RuleId::S5,
        RuleId::S6,
        RuleId::S7,
        RuleId::S8,
        RuleId::S9,
        RuleId::S10,
        RuleId::S11,
        RuleId::S12,
        RuleId::CP1,
        RuleId::CP2,
        RuleId::CP3,
        RuleId::CP4,
        RuleId::CP5,
        RuleId::RI1,
        RuleId::RI2,
        RuleId::RI3,
        RuleId::RI4,
        RuleId::RI5,
        RuleId::RI6,
        RuleId::SA1,
        RuleId::SA2,
        RuleId::SA3,
        RuleId::V1,
        RuleId::M1,
        RuleId::M2,
        RuleId::K1,
        RuleId::REQ,
        RuleId::X3,
        RuleId::X4,
        RuleId::E1,
        RuleId::H1,
        RuleId::H2,
        RuleId::H3,
    ];

    /// The id as users read it: `P10`, `MA4`, `REQ`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleId::C1 => "C1",
            RuleId::C2 => "C2",
            RuleId::C3 => "C3",
            RuleId::C4 => "C4",
            RuleId::C5 => "C5",
            RuleId::A1 => "A1",
            RuleId::A2 => "A2",
            RuleId::A3 => "A3",
            RuleId::A4 => "A4",
            RuleId::A5 => "A5",
            RuleId::A6 => "A6",
            RuleId::A7 => "A7",
            RuleId::A8 => "A8",
            RuleId::A9 => "A9",
            RuleId::A10 => "A10",
            RuleId::R1 => "R1",
            RuleId::P1 => "P1",
            RuleId::P2 => "P2",
            RuleId::P3 => "P3",
            RuleId::P4 => "P4",
            RuleId::P5 => "P5",
            RuleId::P6 => "P6",
            RuleId::P7 => "P7",
            RuleId::P8 => "P8",
            RuleId::P9 => "P9",
            RuleId::P10 => "P10",
            RuleId::P11 => "P11",
            RuleId::PP1 => "PP1",
            RuleId::PP2 => "PP2",
            RuleId::PP3 => "PP3",
            RuleId::PP4 => "PP4",
            RuleId::PP5 => "PP5",
            RuleId::PP6 => "PP6",
            RuleId::PP7 => "PP7",
            RuleId::MP1 => "MP1",
            RuleId::MP2 => "MP2",
            RuleId::MP3 => "MP3",
            RuleId::MP4 => "MP4",
            RuleId::MP5 => "MP5",
            RuleId::MC1 => "MC1",
            RuleId::MC2 => "MC2",
            RuleId::MC3 => "MC3",
            RuleId::MC4 => "MC4",
            RuleId::MA1 => "MA1",
            RuleId::MA2 => "MA2",
            RuleId::MA3 => "MA3",
            RuleId::MA4 => "MA4",
            RuleId::MA5 => "MA5",
            RuleId::S1 => "S1",
            RuleId::S2 => "S2",
            RuleId::S3 => "S3",
            RuleId::S4 => "S4",
            RuleId::S5 => "S5",
            RuleId::S6 => "S6",
            RuleId::S7 => "S7",
            RuleId::S8 => "S8",
            RuleId::S9 => "S9",
            RuleId::S10 => "S10",
            RuleId::S11 => "S11",
            RuleId::S12 => "S12",
            RuleId::V1 => "V1",
            RuleId::CP1 => "CP1",
            RuleId::CP2 => "CP2",
            RuleId::CP3 => "CP3",
            RuleId::CP4 => "CP4",
            RuleId::CP5 => "CP5",
            RuleId::RI1 => "RI1",
            RuleId::RI2 => "RI2",
            RuleId::RI3 => "RI3",
            RuleId::RI4 => "RI4",
            RuleId::RI5 => "RI5",
            RuleId::RI6 => "RI6",
            RuleId::SA1 => "SA1",
            RuleId::SA2 => "SA2",
            RuleId::SA3 => "SA3",
            RuleId::MD1 => "MD1",
            RuleId::M1 => "M1",
            RuleId::M2 => "M2",
            RuleId::K1 => "K1",
            RuleId::REQ => "REQ",
            RuleId::X3 => "X3",
            RuleId::X4 => "X4",
            RuleId::E1 => "E1",
            RuleId::H1 => "H1",
            RuleId::H2 => "H2",
            RuleId::H3 => "H3",
            RuleId::Foreign(id) => id,
        }
    }

    /// The id written as `text` (any case), if this build knows it.
    pub fn parse(text: &str) -> Option<RuleId> {
        RuleId::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(text))
    }

    /// What the rule does to a write. An id from another version may do either.
    pub fn effect(self) -> Effect {
        use RuleId::*;
        match self {
            S9 | MP5 | S8 | C1 | C2 | C4 | C5 | A2 | A3 | A5 | A7 | A9 | A10 | P1 | P3 | P4
            | P5 | P6 | P8 | P9 | P10 | PP1 | PP3 | PP7 | MP3 | MP4 | MC1 | MC2 | MC3 | MA2
            | MA3 | MA4 | S1 | S2 | S4 | S5 | S6 | S10 | S11 | S12 | REQ | R1 | CP1 | CP2 | CP3
            | CP4 | CP5 | RI1 | RI2 | RI3 | RI4 | RI5 | SA1 | SA2 | SA3 => Effect::Deny,
            MA5 | S7 | C3 | A1 | A6 | A8 | P2 | PP2 | PP4 | PP5 | MP1 | MP2 | MC4 | MA1 | S3
            | X3 | MD1 => Effect::DenyOrWarn,
            A4 | P7 | PP6 | V1 | K1 | E1 | RI6 => Effect::Warn,
            H1 | H2 | H3 => Effect::AuditOnly,
            P11 => Effect::Allow,
            M1 | M2 => Effect::Mutate,
            X4 => Effect::CheckOnly,
            Foreign(_) => Effect::DenyOrWarn,
        }
    }

    /// Whether the rule reads other objects through the view (X1): its findings are only as
    /// good as the view, so it is skipped or answered with 503 until the view has synced (X3),
    /// and across replicas the decider answers for it (X2).
    pub fn reads_view(self) -> bool {
        use RuleId::*;
        match self {
            S9 | C3 | A6 | A7 | A8 | A9 | R1 | P8 | P9 | P10 | MP4 | MC4 | MA4 | S5 | V1 | E1
            | H1 | H2 | H3 | CP1 | CP3 | CP4 | CP5 | MD1 | S10 | S11 | S12 | RI3 | RI4 | RI5
            | RI6 | SA1 | SA2 | SA3 => true,
            MA5 | MP5 | S7 | S8 | C1 | C2 | C4 | C5 | A1 | A2 | A3 | A4 | A5 | A10 | P1 | P2
            | P3 | P4 | P5 | P6 | P7 | P11 | PP1 | PP2 | PP3 | PP4 | PP5 | PP6 | PP7 | MP1
            | MP2 | MP3 | MC1 | MC2 | MC3 | MA1 | MA2 | MA3 | S1 | S2 | S3 | S4 | S6 | M1 | M2
            | K1 | REQ | X3 | X4 | CP2 | RI1 | RI2 | Foreign(_) => false,
        }
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for RuleId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<str> for RuleId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<RuleId> for &str {
    fn eq(&self, other: &RuleId) -> bool {
        *self == other.as_str()
    }
}

impl PartialOrd for RuleId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RuleId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl From<RuleId> for &'static str {
    fn from(id: RuleId) -> &'static str {
        id.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_reads_back_as_itself() {
        for id in RuleId::ALL {
            assert_eq!(RuleId::parse(id.as_str()), Some(id));
            assert_eq!(RuleId::parse(&id.as_str().to_lowercase()), Some(id));
        }
        assert_eq!(RuleId::parse("P99"), None);
    }

    #[test]
    fn order_and_equality_follow_the_text() {
        let mut ids = vec![RuleId::P2, RuleId::P10, RuleId::A4, RuleId::Foreign("Z9")];
        ids.sort();
        assert_eq!(ids, ["A4", "P10", "P2", "Z9"]);
        assert_eq!(RuleId::MP4.to_string(), "MP4");
    }
}
