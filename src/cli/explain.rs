//! `ipam-guard explain ID` and `docs/rules.md`: one entry per rule of the catalogue
//! (`crate::catalogue`), each with its example run through the real admission handler and shown
//! as kubectl prints the answer. `explain --all` writes the whole document; a test keeps the
//! committed `docs/rules.md` equal to it.
//!
//! kubectl's rendering (compared byte for byte with real kubectl against a real API server by
//! crates/e2e/tests/e2e_live.rs): each `response.warnings` entry is a `Warning: <text>` line on
//! stderr; a 422 Invalid Status with kind, name and causes prints `The <Kind> "<name>" is
//! invalid: ` followed, for one cause, by `<field>: <message>` on the same line, and for several
//! by one `* <field>: <message>` line per cause (kubectl's `MultilineError`; nothing else: not
//! the webhook, not `status.message`);
//! any other denial prints `Error from server (<reason>): [error when creating "<file>": ]admission
//! webhook "<webhook>" denied the request: <message>`.

use std::io::Write;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Value};

use super::terminal::Style;
use super::{ExplainArgs, ExplainFormat};
use crate::admission::{Admission, Endpoint};
use crate::catalogue::{self, Effect, Rule, Setting};
use crate::cluster::{ClusterView, Ledger};
use crate::index::Index;
use crate::kinds::Kind;
use crate::manifests::{self, Manifest};
use crate::rules::backstop::{self, Coverage};
use crate::rules::Options;

/// The validating webhook's name in `manifests/webhooks.yaml`: the API server quotes it.
pub const WEBHOOK: &str = "validate.ipam-guard.io";

/// The command that refreshes `docs/rules.md`.
pub const REFRESH: &str = "cargo run -q -- explain --all > docs/rules.md";

/// Runs `explain` and returns the exit code: 0, or 2 for an unknown id.
pub fn run(args: &ExplainArgs) -> i32 {
    let mut out = std::io::stdout().lock();
    let terminal = std::io::IsTerminal::is_terminal(&out);
    let rendered = match args.output {
        ExplainFormat::Auto => terminal,
        ExplainFormat::Text => true,
        ExplainFormat::Markdown => false,
    };
    let style = rendered.then(|| Style {
        width: super::terminal::terminal_width(),
        ansi: terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    });
    let shown = |markdown: String| match style {
        Some(style) => super::terminal::render(&markdown, style),
        None => markdown,
    };
    if args.all {
        let _ = out.write_all(shown(document()).as_bytes());
        return 0;
    }
    let id = args.id.as_deref().unwrap_or_default();
    let text = match (catalogue::rule(id), catalogue::principle(id)) {
        (Some(rule), _) => Some(entry(rule)),
        (None, Some(p)) => Some(principle_entry(p)),
        (None, None) => None,
    };
    match text {
        Some(text) => {
            let _ = out.write_all(shown(text).as_bytes());
            0
        }
        None => {
            eprintln!(
                "error: {id:?} is not a rule id of ipam-guard; the ids are: {}",
                catalogue::ids().collect::<Vec<_>>().join(", ")
            );
            2
        }
    }
}

// === kubectl ===

/// The kubectl command an example stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `kubectl create -f <file>`.
    Create,
    /// `kubectl apply -f <file>` over a stored object.
    Apply,
    /// `kubectl delete <plural>.<group> <name>`.
    Delete,
}

/// One kubectl call, enough to print its command line and its output.
#[derive(Debug, Clone)]
pub struct KubectlCall {
    pub verb: Verb,
    pub kind: Kind,
    pub namespace: Option<String>,
    pub name: String,
    /// The file given with `-f` (create, apply).
    pub file: String,
}

impl KubectlCall {
    pub fn command_line(&self) -> String {
        match self.verb {
            Verb::Create => format!("kubectl create -f {}", self.file),
            Verb::Apply => format!("kubectl apply -f {}", self.file),
            Verb::Delete => {
                let ns = match &self.namespace {
                    Some(ns) => format!(" -n {ns}"),
                    None => String::new(),
                };
                format!(
                    "kubectl delete {}.{} {}{ns}",
                    self.kind.plural(),
                    self.kind.group(),
                    self.name
                )
            }
        }
    }

    /// `inclusterippool.ipam.cluster.x-k8s.io`.
    fn resource(&self) -> String {
        format!(
            "{}.{}",
            self.kind.name().to_ascii_lowercase(),
            self.kind.group()
        )
    }
}

/// What kubectl prints (stderr, then stdout) for an admission `response` to `call`, assuming
/// no other webhook or the schema objects first.
pub fn kubectl_output(call: &KubectlCall, response: &Value) -> String {
    let mut out = String::new();
    for w in response["warnings"].as_array().into_iter().flatten() {
        out.push_str(&format!("Warning: {}\n", w.as_str().unwrap_or_default()));
    }
    if response["allowed"] == true {
        let line = match call.verb {
            Verb::Create => format!("{}/{} created", call.resource(), call.name),
            Verb::Apply => format!("{}/{} configured", call.resource(), call.name),
            Verb::Delete => format!("{} {:?} deleted", call.resource(), call.name),
        };
        out.push_str(&line);
        out.push('\n');
        return out;
    }
    let status = &response["status"];
    let details = &status["details"];
    let causes = details["causes"].as_array().filter(|c| !c.is_empty());
    if status["reason"] == "Invalid" {
        let subject = match (details["kind"].as_str(), details["name"].as_str()) {
            (Some(kind), Some(name)) if !kind.is_empty() => format!("The {kind} {name:?}"),
            _ => "The request".to_string(),
        };
        match causes {
            Some(causes) => {
                // kubectl's statusCausesToAggrError: `field: message`, a repeated one once.
                let mut lines: Vec<String> = Vec::with_capacity(causes.len());
                for c in causes {
                    let line = format!(
                        "{}: {}",
                        c["field"].as_str().unwrap_or_default(),
                        c["message"].as_str().unwrap_or_default()
                    );
                    if !lines.contains(&line) {
                        lines.push(line);
                    }
                }
                // kubectl's MultilineError: one cause on the prefix's line, several each on a
                // `* ` line under it (the prefix line keeps its trailing space).
                match lines.as_slice() {
                    [one] => out.push_str(&format!("{subject} is invalid: {one}\n")),
                    many => {
                        out.push_str(&format!("{subject} is invalid: \n"));
                        for line in many {
                            out.push_str(&format!("* {line}\n"));
                        }
                    }
                }
            }
            None => out.push_str(&format!("{subject} is invalid\n")),
        }
        return out;
    }
    let reason = match status["reason"].as_str() {
        Some(r) if !r.is_empty() => format!(" ({r})"),
        _ => String::new(),
    };
    let source = match call.verb {
        Verb::Create => format!("error when creating {:?}: ", call.file),
        Verb::Apply | Verb::Delete => String::new(),
    };
    out.push_str(&format!(
        "Error from server{reason}: {source}admission webhook {WEBHOOK:?} denied the request: {}\n",
        status["message"].as_str().unwrap_or_default()
    ));
    out
}

// === examples ===

/// An example run through the real handler.
#[derive(Debug, Clone)]
pub struct Shown {
    /// The command and what it printed, as a terminal shows them.
    pub transcript: String,
    /// The admission `response` (validating), when the example is a write.
    pub response: Option<Value>,
    /// The JSON Patch the mutating webhook answered, when it answered one.
    pub patch: Option<Value>,
}

/// A view that has not finished its first list (X3's example).
struct NotSynced(Ledger);

impl ClusterView for NotSynced {
    fn synced(&self) -> bool {
        false
    }
    fn object_counts(&self) -> Vec<(Kind, usize)> {
        self.0.object_counts()
    }
    fn read(&self) -> Box<dyn std::ops::Deref<Target = Index> + '_> {
        ClusterView::read(&self.0)
    }
    /// As the shared view it wraps: one decision at a time, admissions pending.
    fn reserve(&self, f: &mut dyn FnMut(&Index) -> Option<crate::model::Projection>) {
        ClusterView::reserve(&self.0, f)
    }
    fn reserve_as(
        &self,
        caller: &crate::cluster::Caller,
        basis: &crate::cluster::Basis,
        f: &mut dyn FnMut(&Index) -> Option<crate::model::Projection>,
    ) {
        ClusterView::reserve_as(&self.0, caller, basis, f)
    }
}

fn manifests(file: &str, yaml: &str) -> Result<Vec<Manifest>, String> {
    let loaded = manifests::read_str(file, yaml);
    match loaded.errors.first() {
        Some(e) => Err(e.to_string()),
        None => Ok(loaded.manifests),
    }
}

fn review(op: &str, m: &Manifest, object: Option<&Value>, old: Option<&Value>) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000000",
            "kind": {"group": m.kind.group(), "version": m.version, "kind": m.kind.name()},
            "resource": {"group": m.kind.group(), "version": m.version, "resource": m.kind.plural()},
            "name": m.name(),
            "namespace": m.namespace(),
            "operation": op,
            "object": object,
            "oldObject": old,
            "dryRun": false,
        }
    })
}

fn answer(admission: &Admission, endpoint: Endpoint, review: &Value) -> Result<Value, String> {
    let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
    let ans = admission.review_now(endpoint, &body);
    let out: Value = serde_json::from_slice(&ans.body).map_err(|e| e.to_string())?;
    if ans.http_status != 200 {
        return Err(format!("HTTP {}: {out}", ans.http_status));
    }
    Ok(out["response"].clone())
}

/// Runs the rule's example through the admission handler (or `check`, for X4).
pub fn show(rule: &Rule) -> Result<Shown, String> {
    let e = &rule.example;
    let written = manifests("example.yaml", e.object)?;
    let Some(m) = written.first() else {
        return Err(format!("{}: the example holds no object", rule.id));
    };
    let file = format!("{}.yaml", m.name());
    if rule.effect() == Effect::CheckOnly {
        let written = manifests(&file, e.object)?;
        let (_, findings) = crate::judge::judge(written, Options::default());
        let mut transcript = format!("$ ipam-guard check {file}\n");
        for f in findings {
            transcript.push_str(&format!("{f}\n"));
        }
        return Ok(Shown {
            transcript,
            response: None,
            patch: None,
        });
    }

    if rule.effect() == Effect::AuditOnly {
        let mut stored = manifests("cluster.yaml", e.cluster)?;
        stored.extend(manifests(&file, e.object)?);
        let view = crate::cluster::StaticView::from_manifests(stored);
        let outcome = crate::judge::audit::judge_view_at(
            &view,
            Options::default(),
            std::time::SystemTime::now(),
        );
        let mut transcript = format!("$ ipam-guard audit --rule {}\n", rule.id);
        transcript.push_str(&super::audit::text(&outcome.findings, rule.id.as_str()));
        return Ok(Shown {
            transcript,
            response: None,
            patch: None,
        });
    }

    let clock = crate::cluster::ManualClock::new();
    let shared = Ledger::new(
        crate::cluster::StaticView::from_manifests(manifests("cluster.yaml", e.cluster)?)
            .into_index(),
    )
    .with_clock(clock.clone());
    if e.setting == Setting::AfterRelease {
        // As the watch reports a delete, then time passes.
        let gone: Vec<_> = shared.read().addresses().map(|a| a.key.clone()).collect();
        for key in &gone {
            shared.delete(key);
        }
        clock.advance(std::time::Duration::from_secs(catalogue::RELEASED_AGO));
    }
    let view: Arc<dyn ClusterView> = match e.setting {
        Setting::ViewNotSynced => Arc::new(NotSynced(shared)),
        Setting::Default | Setting::WithoutObject | Setting::AfterRelease => Arc::new(shared),
    };
    let admission = Admission::new(view, Options::default());
    let old = match e.old {
        Some(yaml) => Some(
            manifests("old.yaml", yaml)?
                .into_iter()
                .next()
                .ok_or("empty old object")?
                .object,
        ),
        None => None,
    };
    let (verb, mut object, old) = match e.operation {
        "CREATE" => (Verb::Create, Some(m.object.clone()), None),
        "UPDATE" => (Verb::Apply, Some(m.object.clone()), old),
        "DELETE" => (Verb::Delete, None, Some(m.object.clone())),
        other => return Err(format!("{}: unknown operation {other}", rule.id)),
    };
    if e.setting == Setting::WithoutObject {
        object = None;
    }
    // The API server calls the mutating webhooks first and validates what they produced.
    let mut patch = None;
    if let Some(obj) = object.as_mut().filter(|_| m.kind.mutated()) {
        let mutated = answer(
            &admission,
            Endpoint::Mutate,
            &review(e.operation, m, Some(obj), old.as_ref()),
        )?;
        if let Some(p) = mutated["patch"].as_str() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| e.to_string())?;
            let ops: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
            let parsed: json_patch::Patch =
                serde_json::from_value(ops.clone()).map_err(|e| e.to_string())?;
            json_patch::patch(obj, &parsed).map_err(|e| e.to_string())?;
            patch = Some(ops);
        }
    }
    let response = answer(
        &admission,
        Endpoint::Validate,
        &review(e.operation, m, object.as_ref(), old.as_ref()),
    )?;
    let call = KubectlCall {
        verb,
        kind: m.kind,
        namespace: m.namespace().map(str::to_string),
        name: m.name().to_string(),
        file,
    };
    let transcript = format!(
        "$ {}\n{}",
        call.command_line(),
        kubectl_output(&call, &response)
    );
    Ok(Shown {
        transcript,
        response: Some(response),
        patch,
    })
}

// === the document ===

/// One rule's entry, in Markdown (also what `explain ID` prints).
pub fn entry(rule: &Rule) -> String {
    let e = &rule.example;
    let mut s = format!("## {}\n\n{}\n\n", rule.id, rule.summary);
    s.push_str(&format!(
        "- **Effect:** {}\n- **Kinds:** {}\n- **Operations:** {}\n- **Field:** {}\n- **Reads other objects:** {}\n\n",
        rule.effect().label(),
        rule.kinds,
        rule.operations,
        rule.field,
        if rule.reads_view() {
            "yes (from the cluster view; see X3 until it has synced)"
        } else {
            "no"
        }
    ));
    s.insert_str(
        s.len() - 1,
        &format!("- **Without the webhook:** {}\n", backstop_line(rule)),
    );
    let shown = show(rule);
    let file = manifests("example.yaml", e.object)
        .ok()
        .and_then(|m| m.first().map(|m| format!("{}.yaml", m.name())))
        .unwrap_or_default();
    match rule.effect() {
        Effect::CheckOnly => s.push_str(&format!("Example: `{file}`\n\n")),
        Effect::AuditOnly => s.push_str("Example: stored in the cluster\n\n"),
        _ => match (e.operation, e.setting) {
            (_, Setting::WithoutObject) => s.push_str(
                "Example: a CREATE review for this object whose `object` is missing (an API server never sends one; a broken caller or a hand-made review can):\n\n",
            ),
            ("DELETE", _) => s.push_str("Example: deleting this object\n\n"),
            ("UPDATE", _) => s.push_str(&format!("Example: `{file}`, applied over the stored object below\n\n")),
            _ => s.push_str(&format!("Example: `{file}`\n\n")),
        },
    }
    s.push_str(&format!("```yaml\n{}```\n\n", e.object));
    if let Some(old) = e.old {
        s.push_str(&format!("Stored before:\n\n```yaml\n{old}```\n\n"));
    }
    if !e.cluster.is_empty() {
        s.push_str(&format!(
            "Already in the cluster:\n\n```yaml\n{}```\n\n",
            e.cluster
        ));
    }
    if e.setting == Setting::ViewNotSynced {
        s.push_str("While ipam-guard has not finished reading the cluster (its view has not synced yet):\n\n");
    }
    if e.setting == Setting::AfterRelease {
        s.push_str(&format!(
            "Then the IPAddress above is deleted (`kubectl delete ipaddresses.ipam.cluster.x-k8s.io web-0 -n team-a`), and {} s later:\n\n",
            catalogue::RELEASED_AGO
        ));
    }
    match shown {
        Ok(shown) => {
            if let Some(patch) = &shown.patch {
                s.push_str(&format!(
                    "The mutating webhook answers with this JSON Patch:\n\n```json\n{}\n```\n\n",
                    serde_json::to_string_pretty(patch).unwrap_or_default()
                ));
            }
            let what = match rule.effect() {
                Effect::CheckOnly => "`ipam-guard check` prints",
                Effect::AuditOnly => "`ipam-guard audit` prints",
                _ => "kubectl prints",
            };
            s.push_str(&format!(
                "{what}:\n\n```console\n{}```\n\n",
                shown.transcript
            ));
        }
        Err(e) => s.push_str(&format!("(the example could not be run: {e})\n\n")),
    }
    s
}

/// The entry of an id that names how ipam-guard works (SCHEMA, X1, X2, X5) rather than a rule.
pub fn principle_entry(p: &catalogue::Principle) -> String {
    format!(
        "## {}\n\n**{}.**\n\n{}\n\n",
        p.id,
        capitalised(p.title),
        p.text
    )
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// What keeps the rule when the webhook is not asked (`ipam-guard policies`).
fn backstop_line(rule: &Rule) -> String {
    match backstop::coverage(rule.id) {
        Coverage::Policy {
            name,
            since,
            partial,
        } => {
            let mut s = format!(
                "ValidatingAdmissionPolicy `{name}` (Kubernetes 1.{since}+; `ipam-guard policies`, `manifests/components/cel-backstop`)"
            );
            if let Some(p) = partial {
                s.push_str(&format!(". Only part of the rule: {p}"));
            }
            s
        }
        Coverage::WebhookOnly(why) => format!("no policy: {why}"),
        Coverage::NotApplicable(why) => format!("no policy ({why})"),
    }
}

/// The section of `docs/rules.md` on where ipam-guard and the providers' own webhooks answer
/// differently, from `catalogue::DIFFERENCES`.
pub fn differences() -> String {
    let mut s = String::from(
        "## Differences from the providers' own webhooks\n\n\
         Where ipam-guard deliberately answers a write otherwise than Cluster API's IPAddress and \
         IPAddressClaim webhooks, the in-cluster provider's pool webhooks, Metal3 IPAM's or \
         Spiderpool's own webhook would (stricter or looser), and why. Every other write one of \
         these IPAM webhooks' code and test suite (as read for this table) refuses, ipam-guard \
         refuses too. For the cluster kinds and Metal3DataTemplate ipam-guard judges only the \
         addresses and pool references, and the rows name where it meets Cluster API's, CAPM3's \
         and the Proxmox provider's webhooks. Keeping both webhooks installed gives the union of \
         their refusals.\n\n\
         | provider | write | provider's webhook | ipam-guard | why |\n|---|---|---|---|---|\n",
    );
    for d in catalogue::DIFFERENCES {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            d.provider, d.case, d.provider_answer, d.ipam_guard, d.why
        ));
    }
    s.push('\n');
    s
}

/// The whole of `docs/rules.md`.
pub fn document() -> String {
    let mut s = String::from(
        "# ipam-guard rules\n\n\
         Every rule id ipam-guard reports: in kubectl messages (`[ipam-guard <ID>]` at the end of \
         each cause and warning), in `ipam-guard check` and `audit` output (`[<ID>]`), in logs and in \
         `ipam_guard_decisions_total{rule}`. `ipam-guard explain <ID>` prints one entry in a terminal.\n\n\
         Each example is run through ipam-guard's admission code when this page is generated; what \
         follows `kubectl prints:` is what kubectl shows for that answer (an API server may refuse a \
         few of these objects on its CRD schema first; ipam-guard judges them the same way in `check` \
         and `audit`).\n\n\
         **Without the webhook** says what keeps a rule in force when ipam-guard is not asked (the \
         webhook unreachable, or removed): the rules that read only the object being written have a \
         ValidatingAdmissionPolicy where CEL can say them without ever refusing what the webhook \
         allows (`ipam-guard policies`, the kustomize component `manifests/components/cel-backstop`); \
         the others say why not.\n\n",
    );
    s.push_str(&format!(
        "Generated from the rule catalogue (`crates/core/src/catalogue/`) by `{REFRESH}`; do not \
         edit by hand (`tests/rules_doc.rs` fails when this file is stale).\n\n"
    ));
    s.push_str("| id | effect | kinds | what |\n|---|---|---|---|\n");
    for r in catalogue::RULES {
        let first = r.summary.split(". ").next().unwrap_or(r.summary);
        let first = first.trim_end_matches('.');
        s.push_str(&format!(
            "| [{}](#{}) | {} | {} | {}. |\n",
            r.id,
            r.id.as_str().to_ascii_lowercase(),
            r.effect().label(),
            r.kinds,
            first
        ));
    }
    for p in catalogue::PRINCIPLES {
        s.push_str(&format!(
            "| [{}](#{}) | - | - | {}. |\n",
            p.id,
            p.id.to_ascii_lowercase(),
            capitalised(p.title)
        ));
    }
    s.push('\n');
    for r in catalogue::RULES {
        s.push_str(&entry(r));
    }
    for p in catalogue::PRINCIPLES {
        s.push_str(&principle_entry(p));
    }
    s.push_str(&differences());
    s.truncate(s.trim_end().len());
    s.push('\n');
    s
}
