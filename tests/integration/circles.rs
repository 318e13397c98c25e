//! What Cargo cannot see: inside a crate, no modules use each other in a circle, and no
//! folders do, so a file can be read knowing only what it points down to. A module is a file
//! (`mod.rs`, `lib.rs` and `main.rs` are their folder's own); it uses another when its code
//! (comments, literals and `#[cfg(test)]` items left out) names it in a `use` or a path from
//! `crate::`, `super::`, `self::` or a name a `use` or child module binds, followed through
//! re-exports (`pub use`, `pub use x::*`; in a mod file these only re-export and make no
//! edge), and when it calls a method that an extension `impl T { … }` adds outside `T`'s
//! module: as `T::m`, or as `.m(`, `.m::<` or `Self::m` when no other `fn` of the crate is
//! named `m` and the calling file names `T`. Every circle among a crate's modules fails, and
//! so does one among a folder's entries (its files, its subfolders taken whole) that takes in
//! a subfolder: a module using another makes an edge between their entries in the deepest
//! folder holding both. Each circle is shown as a chain, each edge with the lines that make
//! it. Limits, as this reads text, not types: a type is known by its last name; a method
//! call is followed only when its name is the crate's one `fn` of that name (`root.open(` is
//! missed, `Root::open(` is not) and its file names the type, so a call on a value whose type
//! the file never names is missed, and a call to another crate's or std's method of the same
//! name is taken for the extension's; methods of `impl Trait for T`, macros, names a glob
//! `use` brings into a file, `#[path]` and `cfg`s other than `test` are not followed.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// A module path inside a crate, e.g. `["mailbox", "send"]`; the crate's root is `[]`.
type ModPath = Vec<String>;

/// One module's file, read.
struct File {
    /// Its path under `src/`, e.g. `mailbox/send.rs`.
    rel: String,
    /// Its text as written, for the lines a failure quotes.
    text: String,
    /// The same with comments, literals and `#[cfg(test)]` items blanked: same offsets.
    code: String,
    /// Where each of its lines starts.
    lines: Vec<usize>,
}

/// What a module binds and defines.
#[derive(Default)]
struct Scope {
    /// Each name it binds (child modules, `use` leaves) to the absolute path it stands for.
    names: BTreeMap<String, ModPath>,
    /// The modules it re-exports whole (`pub use x::*`).
    globs: Vec<ModPath>,
    /// The names its items define.
    defs: BTreeSet<String>,
    /// Its `use` leaves: (absolute path, offset, whether it only re-exports).
    uses: Vec<(ModPath, usize, bool)>,
}

/// One crate: each module's file and scope.
struct Crate {
    files: BTreeMap<ModPath, File>,
    scopes: BTreeMap<ModPath, Scope>,
}

/// Why one module uses another: the using line, and what makes a hidden edge.
#[derive(Clone)]
struct Why {
    line: usize,
    note: String,
}

/// Each module, the modules it uses, and the first line that does.
type Graph = BTreeMap<ModPath, BTreeMap<ModPath, Why>>;

/// A folder's entries, those each uses, and the module edges that make each entry edge.
type Entries = BTreeMap<String, BTreeMap<String, Vec<(ModPath, ModPath, Why)>>>;

/// The words after which an item's name comes.
const ITEM_KINDS: [&str; 10] = [
    "struct",
    "enum",
    "union",
    "trait",
    "type",
    "fn",
    "const",
    "static",
    "mod",
    "macro_rules",
];

/// Every `.rs` file under `src`, as (path under `src/`, text).
pub(crate) fn load(src: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut todo = vec![src.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(src)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The module a file under `src/` holds: `a/b.rs` is `a::b`, `a/mod.rs` is `a`.
fn module_of(rel: &str) -> ModPath {
    let mut path: ModPath = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(
        path.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        path.pop();
    }
    path
}

fn is_mod_file(rel: &str) -> bool {
    matches!(
        rel.rsplit('/').next(),
        Some("mod.rs" | "lib.rs" | "main.rs")
    )
}

/// `text` with every comment and string or char literal blanked (newlines kept), and any
/// other non-ASCII byte too, so offsets and lines stay those of `text`.
pub(crate) fn strip(text: &str) -> String {
    let mut b = text.as_bytes().to_vec();
    let mut i = 0;
    while i < b.len() {
        match literal_end(&b, i) {
            Some(end) => {
                blank(&mut b[i..end]);
                i = end;
            }
            None => i += 1,
        }
    }
    b.iter_mut()
        .filter(|c| !c.is_ascii())
        .for_each(|c| *c = b' ');
    String::from_utf8(b).unwrap()
}

fn blank(b: &mut [u8]) {
    b.iter_mut()
        .filter(|c| **c != b'\n')
        .for_each(|c| *c = b' ');
}

/// Where the comment or literal that starts at `i` ends, if one starts there.
fn literal_end(b: &[u8], i: usize) -> Option<usize> {
    let ident = |j: usize| b[j].is_ascii_alphanumeric() || b[j] == b'_';
    let next = |j: usize, c: u8| (j..b.len()).find(|&k| b[k] == c).unwrap_or(b.len());
    let raw_start = i == 0 || !ident(i - 1) || (b[i - 1] == b'b' && (i < 2 || !ident(i - 2)));
    match (b[i], b.get(i + 1)) {
        (b'/', Some(b'/')) => Some(next(i, b'\n')),
        (b'/', Some(b'*')) => Some(block_comment_end(b, i)),
        (b'"', _) => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            Some((j + 1).min(b.len()))
        }
        (b'r', _) if raw_start => {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                return None;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let start = i + 2 + hashes;
            let found = b[start..].windows(close.len()).position(|w| w == close);
            Some(found.map_or(b.len(), |p| start + p + close.len()))
        }
        (b'\'', Some(b'\\')) => Some((next(i + 3, b'\'') + 1).min(b.len())),
        (b'\'', Some(&c)) => {
            let len = match c {
                0..0x80 => 1,
                0xF0.. => 4,
                0xE0.. => 3,
                _ => 2,
            };
            (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
        }
        _ => None,
    }
}

/// One past the end of the (nested) block comment that starts at `i`.
fn block_comment_end(b: &[u8], i: usize) -> usize {
    let (mut depth, mut j) = (0, i);
    while j + 1 < b.len() {
        match &b[j..j + 2] {
            b"/*" => (depth, j) = (depth + 1, j + 2),
            b"*/" if depth == 1 => return j + 2,
            b"*/" => (depth, j) = (depth - 1, j + 2),
            _ => j += 1,
        }
    }
    b.len()
}

/// `code` with each `#[cfg(test)]` item blanked, and the modules it declares test-only
/// (`#[cfg(test)] mod x;`).
pub(crate) fn blank_tests(code: &str) -> (String, Vec<String>) {
    const ATTR: &str = "#[cfg(test)]";
    let mut b = code.as_bytes().to_vec();
    let mut test_mods = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find(ATTR) {
        let start = from + p;
        let end = item_end(code.as_bytes(), start + ATTR.len());
        let item = words(&code[start + ATTR.len()..end]);
        let declared = item.windows(2).find(|w| w[0].1 == "mod").map(|w| w[1].1);
        if let (Some(name), true) = (declared, code[..end].ends_with(';')) {
            test_mods.push(name.to_string());
        }
        blank(&mut b[start..end]);
        from = end;
    }
    (String::from_utf8(b).unwrap(), test_mods)
}

/// One past the end of the item (or field, or arm) that starts at `i`: its `;` or `,`, or
/// its body's closing brace.
pub(crate) fn item_end(b: &[u8], i: usize) -> usize {
    let mut depth = 0;
    for (j, &c) in b.iter().enumerate().skip(i) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth == 0 => return j,
            b'}' if depth == 1 => return j + 1,
            b')' | b']' | b'}' => depth -= 1,
            b';' | b',' if depth == 0 => return j + 1,
            _ => {}
        }
    }
    b.len()
}

/// The identifiers and keywords of `code`, each with its offset.
pub(crate) fn words(code: &str) -> Vec<(usize, &str)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        if i == start {
            i += 1;
        } else if !b[start].is_ascii_digit() {
            out.push((start, &code[start..i]));
        }
    }
    out
}

/// The path `a::b::c` that `s` starts with.
fn read_path(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        out.push(rest[..end].to_string());
        match rest[end..].strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    out
}

/// Each `use` item of `code`: (where its tree starts, where its `;` is, whether it is `pub`).
fn use_items(code: &str) -> Vec<(usize, usize, bool)> {
    let mut out = Vec::new();
    for (at, w) in words(code) {
        if w != "use" || code[at + 3..].trim_start().starts_with('<') {
            continue; // `impl Trait + use<'a>`
        }
        let Some(len) = code[at..].find(';') else {
            continue;
        };
        let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
        let is_pub = code[line_start..at].trim_start().starts_with("pub");
        out.push((at + 3, at + len, is_pub));
    }
    out
}

/// A `use` leaf: the path it names, the name it binds, whether it is a glob, its offset.
struct Leaf {
    path: Vec<String>,
    bind: Option<String>,
    glob: bool,
    at: usize,
}

/// Reads the use tree `s` (at offset `at`), under `prefix`, into its leaves.
fn use_leaves(s: &str, at: usize, prefix: Vec<String>, out: &mut Vec<Leaf>) {
    let at = at + s.len() - s.trim_start().len();
    let s = s.trim_start();
    if let Some(group) = s.strip_prefix('{') {
        for (part, off) in group_items(group) {
            use_leaves(part, at + 1 + off, prefix.clone(), out);
        }
        return;
    }
    let mut path = prefix;
    path.extend(read_path(s));
    let rest = s.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    let rest = rest.trim_start();
    if rest.starts_with('{') {
        return use_leaves(rest, at + s.len() - rest.len(), path, out);
    }
    let glob = rest.starts_with('*');
    if path.last().is_some_and(|l| l == "self") {
        path.pop();
    }
    let bind = match rest.strip_prefix("as ") {
        Some(name) => name
            .split_whitespace()
            .next()
            .filter(|n| *n != "_")
            .map(String::from),
        None if glob => None,
        None => path.last().cloned(),
    };
    out.push(Leaf {
        path,
        bind,
        glob,
        at,
    });
}

/// The items of a `{…}` group whose text after `{` is `group`, each with its offset there.
fn group_items(group: &str) -> Vec<(&str, usize)> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 0 => {
                out.push((&group[start..i], start));
                if c == '}' {
                    break;
                }
                start = i + 1;
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    out.retain(|(part, _)| !part.trim().is_empty());
    out
}

/// The inline modules (`mod x { … }`) of `code`: (name, start, end).
fn inline_mods(code: &str) -> Vec<(String, usize, usize)> {
    let ws = words(code);
    let mut out = Vec::new();
    for w in ws.windows(2).filter(|w| w[0].1 == "mod") {
        let after = w[1].0 + w[1].1.len();
        if code[after..].trim_start().starts_with('{') {
            let open = after + code[after..].find('{').unwrap();
            out.push((w[1].1.to_string(), open, item_end(code.as_bytes(), open)));
        }
    }
    out
}

/// The module path at `offset` of module `here`'s file, inside its inline modules.
fn scope_at(here: &ModPath, mods: &[(String, usize, usize)], offset: usize) -> ModPath {
    let inside = mods.iter().filter(|(_, s, e)| (*s..*e).contains(&offset));
    here.iter()
        .cloned()
        .chain(inside.map(|(n, _, _)| n.clone()))
        .collect()
}

/// The absolute path of `path` written in `scope` with `names` bound; `None` for another
/// crate's.
fn absolute(
    path: &[String],
    scope: &ModPath,
    names: &BTreeMap<String, ModPath>,
) -> Option<ModPath> {
    let (first, rest) = path.split_first()?;
    let mut base = match first.as_str() {
        "crate" => Vec::new(),
        "self" => scope.clone(),
        "super" => scope[..scope.len().checked_sub(1)?].to_vec(),
        name => names.get(name)?.clone(),
    };
    for seg in rest {
        if seg == "super" {
            base.pop()?;
        } else {
            base.push(seg.clone());
        }
    }
    Some(base)
}

/// Reads a crate's sources (path under `src/`, text): its modules, but test-only ones.
fn parse(sources: &[(String, String)]) -> Crate {
    let mut files = BTreeMap::new();
    let mut test_only: Vec<ModPath> = Vec::new();
    for (rel, text) in sources {
        let (code, test_mods) = blank_tests(&strip(text));
        let module = module_of(rel);
        test_only.extend(
            test_mods
                .into_iter()
                .map(|m| [module.clone(), vec![m]].concat()),
        );
        let lines = std::iter::once(0)
            .chain(code.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let (rel, text) = (rel.clone(), text.clone());
        files.insert(
            module,
            File {
                rel,
                text,
                code,
                lines,
            },
        );
    }
    files.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
    let scopes = files
        .iter()
        .map(|(m, f)| (m.clone(), scope(m, f, &files)))
        .collect();
    Crate { files, scopes }
}

/// What module `here`, whose file is `file`, binds and defines.
fn scope(here: &ModPath, file: &File, files: &BTreeMap<ModPath, File>) -> Scope {
    let mut s = Scope::default();
    let mods = inline_mods(&file.code);
    for child in files
        .keys()
        .filter(|m| m.len() == here.len() + 1 && m.starts_with(here))
    {
        s.names.insert(child[here.len()].clone(), child.clone());
    }
    for (name, open, _) in &mods {
        s.names
            .insert(name.clone(), scope_at(here, &mods, open + 1));
    }
    let ws = words(&file.code);
    let defs = ws.windows(2).filter(|w| ITEM_KINDS.contains(&w[0].1));
    s.defs = defs.map(|w| w[1].1.to_string()).collect();
    let mut todo = Vec::new();
    for (start, end, is_pub) in use_items(&file.code) {
        let mut leaves = Vec::new();
        use_leaves(&file.code[start..end], start, Vec::new(), &mut leaves);
        todo.extend(leaves.into_iter().map(|leaf| (leaf, is_pub)));
    }
    let reexports = is_mod_file(&file.rel);
    // A leaf may start with a name another leaf binds: resolve until none more resolve.
    loop {
        let before = todo.len();
        todo.retain(|(leaf, is_pub)| {
            let scope = scope_at(here, &mods, leaf.at);
            let Some(abs) = absolute(&leaf.path, &scope, &s.names) else {
                return true;
            };
            if leaf.glob && *is_pub {
                s.globs.push(abs.clone());
            }
            if let Some(name) = &leaf.bind {
                s.names.entry(name.clone()).or_insert(abs.clone());
            }
            s.uses.push((abs, leaf.at, *is_pub && reexports));
            false
        });
        if todo.len() == before {
            return s;
        }
    }
}

/// The module an absolute path lands in: its deepest module, followed through re-exports.
fn target(krate: &Crate, path: &[String], depth: usize) -> Option<ModPath> {
    let n = (0..=path.len())
        .rev()
        .find(|&n| krate.scopes.contains_key(&path[..n]))?;
    let (module, rest) = (&path[..n], &path[n..]);
    let (Some(name), true) = (rest.first(), depth < 8) else {
        return Some(module.to_vec());
    };
    let scope = &krate.scopes[module];
    let via = |to: &ModPath| [to.clone(), rest[1..].to_vec()].concat();
    if let Some(to) = scope
        .names
        .get(name)
        .filter(|to| **to != [module, &rest[..1]].concat())
    {
        return target(krate, &via(to), depth + 1);
    }
    for glob in &scope.globs {
        let Some(s) = krate.scopes.get(glob) else {
            continue;
        };
        if s.defs.contains(name) || s.names.contains_key(name) {
            return target(krate, &[glob.clone(), rest.to_vec()].concat(), depth + 1);
        }
    }
    Some(module.to_vec())
}

fn add(g: &mut Graph, from: &ModPath, to: ModPath, why: Why) {
    if *from != to {
        let slot = g
            .entry(from.clone())
            .or_default()
            .entry(to)
            .or_insert(why.clone());
        if why.line < slot.line {
            *slot = why;
        }
    }
}

fn line_of(file: &File, at: usize) -> usize {
    file.lines.partition_point(|&start| start <= at)
}

/// Every module's edges: its paths and its calls into extension `impl`s.
fn graph(krate: &Crate) -> Graph {
    let mut g = Graph::new();
    for here in krate.files.keys() {
        path_edges(krate, here, &mut g);
    }
    extension_edges(krate, &mut g);
    g
}

/// The edges of module `here`'s `use`s (not its re-exports) and of the paths in its code.
fn path_edges(krate: &Crate, here: &ModPath, g: &mut Graph) {
    let (file, scope) = (&krate.files[here], &krate.scopes[here]);
    let why = |at: usize| Why {
        line: line_of(file, at),
        note: String::new(),
    };
    for (abs, at, reexport) in &scope.uses {
        if let (false, Some(to)) = (*reexport, target(krate, abs, 0)) {
            add(g, here, to, why(*at));
        }
    }
    let mut code = file.code.clone().into_bytes();
    for (start, end, _) in use_items(&file.code) {
        blank(&mut code[start..end]);
    }
    let code = String::from_utf8(code).unwrap();
    let mods = inline_mods(&file.code);
    for (at, w) in words(&code) {
        let prev = at.checked_sub(1).map(|p| code.as_bytes()[p]);
        let starts = !prev.is_some_and(|c| c == b':' || c == b'_' || c.is_ascii_alphanumeric());
        let bound = matches!(w, "crate" | "super" | "self") || scope.names.contains_key(w);
        if !starts || !bound || !code[at + w.len()..].starts_with("::") {
            continue;
        }
        let path = read_path(&code[at..]);
        let Some(abs) = absolute(&path, &scope_at(here, &mods, at), &scope.names) else {
            continue;
        };
        if let Some(to) = target(krate, &abs, 0) {
            add(g, here, to, why(at));
        }
    }
}

/// An extension `impl T { … }`: in `module`, on a type only other modules define.
struct Extension {
    ty: String,
    module: ModPath,
    methods: BTreeSet<String>,
}

/// Every extension `impl` of the crate.
fn extensions(krate: &Crate) -> Vec<Extension> {
    let mut homes: BTreeMap<&str, BTreeSet<&ModPath>> = BTreeMap::new();
    for (m, f) in &krate.files {
        let ws = words(&f.code);
        for w in ws.windows(2) {
            if matches!(w[0].1, "struct" | "enum" | "union") {
                homes.entry(w[1].1).or_default().insert(m);
            }
        }
    }
    let mut out = Vec::new();
    for (m, f) in &krate.files {
        for (at, _) in words(&f.code).into_iter().filter(|(_, w)| *w == "impl") {
            let Some((ty, open)) = impl_type(&f.code, at + 4) else {
                continue;
            };
            if homes.get(ty.as_str()).is_none_or(|h| h.contains(m)) {
                continue;
            }
            let methods = block_fns(&f.code, open);
            out.push(Extension {
                ty,
                module: m.clone(),
                methods,
            });
        }
    }
    out
}

/// The type an inherent `impl` whose header starts at `from` is for, and where its body
/// opens; `None` for a trait's `impl … for …`.
fn impl_type(code: &str, from: usize) -> Option<(String, usize)> {
    let open = from + code[from..].find(['{', ';'])?;
    let mut rest = code[from..open].trim_start();
    if rest.starts_with('<') {
        rest = rest[angle_end(rest)?..].trim_start();
    }
    let ty = read_path(rest).pop()?;
    let ident_or_colon = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut after = rest.trim_start_matches(ident_or_colon).trim_start();
    if after.starts_with('<') {
        after = &after[angle_end(after)?..];
    }
    let is_trait = words(after).first().is_some_and(|(_, w)| *w == "for");
    (!is_trait && code.as_bytes()[open] == b'{').then_some((ty, open))
}

/// One past the `>` that closes the `<` `s` starts with.
fn angle_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0;
    for i in 0..b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' if depth == 1 => return Some(i + 1),
            b'>' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The names of the `fn`s directly in the block that opens at `open`.
fn block_fns(code: &str, open: usize) -> BTreeSet<String> {
    let block = &code[open..item_end(code.as_bytes(), open)];
    let depth = |at: usize| {
        let b = block[..at].bytes();
        b.map(|c| (c == b'{') as i32 - (c == b'}') as i32)
            .sum::<i32>()
    };
    let ws = words(block);
    let fns = ws
        .windows(2)
        .filter(|w| w[0].1 == "fn" && depth(w[0].0) == 1);
    fns.map(|w| w[1].1.to_string()).collect()
}

/// The hidden edges: a module that calls a method of an extension `impl T` uses the
/// module of that `impl`.
fn extension_edges(krate: &Crate, g: &mut Graph) {
    let exts = extensions(krate);
    let mut fn_count: BTreeMap<&str, usize> = BTreeMap::new();
    for f in krate.files.values() {
        for w in words(&f.code).windows(2).filter(|w| w[0].1 == "fn") {
            *fn_count.entry(w[1].1).or_default() += 1;
        }
    }
    for (here, f) in &krate.files {
        let ws = words(&f.code);
        for e in exts.iter().filter(|e| e.module != *here) {
            if !ws.iter().any(|(_, w)| *w == e.ty) {
                continue; // the file never names `T`
            }
            let home = &krate.files[&e.module].rel;
            for (at, m) in calls_into(e, &f.code, &ws, &fn_count) {
                let note = format!(" ({}::{m} is in {home}'s impl {})", e.ty, e.ty);
                add(
                    g,
                    here,
                    e.module.clone(),
                    Why {
                        line: line_of(f, at),
                        note,
                    },
                );
            }
        }
    }
}

/// Where `code`, whose words are `ws`, calls a method of `e`: as `T::m`, or as `.m(`,
/// `.m::<` or `Self::m` where `m` names no other `fn` of the crate.
fn calls_into<'a>(
    e: &Extension,
    code: &str,
    ws: &[(usize, &'a str)],
    fn_count: &BTreeMap<&str, usize>,
) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    for (k, &(at, m)) in ws.iter().enumerate() {
        if !e.methods.contains(m) {
            continue;
        }
        let (before, after) = (&code[..at], &code[at + m.len()..]);
        let prev = k.checked_sub(1).map(|p| ws[p]);
        let owner = prev.filter(|(o, w)| before.ends_with("::") && o + w.len() + 2 == at);
        let owner = owner.map(|(_, w)| w);
        let unique = fn_count.get(m) == Some(&1);
        let called = before.ends_with('.') && (after.starts_with('(') || after.starts_with("::<"));
        if owner == Some(e.ty.as_str()) || unique && (called || owner == Some("Self")) {
            out.push((at, m));
        }
    }
    out
}

/// Each folder's entries (its files, and its subfolders taken whole) and which use which:
/// module `a` using `b` is an edge between their entries in the deepest folder holding both.
fn folder_graphs(g: &Graph) -> BTreeMap<ModPath, Entries> {
    let mut out: BTreeMap<ModPath, Entries> = BTreeMap::new();
    for (a, outs) in g {
        for (b, why) in outs {
            let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if n == a.len() || n == b.len() {
                continue; // a folder's own file and what is inside it
            }
            let from = out.entry(a[..n].to_vec()).or_default().entry(a[n].clone());
            let to = from.or_default().entry(b[n].clone()).or_default();
            to.push((a.clone(), b.clone(), why.clone()));
        }
    }
    out
}

/// The nodes `from` reaches in `g`.
fn reach<N: Ord + Clone, W>(g: &BTreeMap<N, BTreeMap<N, W>>, from: &N) -> BTreeSet<N> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.clone()];
    while let Some(n) = todo.pop() {
        for m in g.get(&n).into_iter().flat_map(|o| o.keys()) {
            if seen.insert(m.clone()) {
                todo.push(m.clone());
            }
        }
    }
    seen
}

/// A shortest path `from` … `to` in `g`, which must have one.
fn shortest<N: Ord + Clone, W>(g: &BTreeMap<N, BTreeMap<N, W>>, from: &N, to: &N) -> Vec<N> {
    let mut prev: BTreeMap<N, N> = BTreeMap::new();
    let mut todo = VecDeque::from([from.clone()]);
    while let Some(n) = todo.pop_front().filter(|n| n != to) {
        for m in g.get(&n).into_iter().flat_map(|o| o.keys()) {
            if m != from && !prev.contains_key(m) {
                prev.insert(m.clone(), n.clone());
                todo.push_back(m.clone());
            }
        }
    }
    let mut path = vec![to.clone()];
    while path.last() != Some(from) {
        path.push(prev[path.last().unwrap()].clone());
    }
    path.reverse();
    path
}

/// Each strongly connected group of more than one of `g`'s nodes, with circles that
/// together take every edge inside it: the shortest through each edge none took before.
fn circles<N: Ord + Clone, W>(g: &BTreeMap<N, BTreeMap<N, W>>) -> Vec<(Vec<N>, Vec<Vec<N>>)> {
    let mut out = Vec::new();
    let mut grouped: BTreeSet<N> = BTreeSet::new();
    for n in g.keys() {
        if grouped.contains(n) {
            continue;
        }
        let group: Vec<N> = reach(g, n)
            .into_iter()
            .filter(|m| reach(g, m).contains(n))
            .collect();
        if group.len() < 2 {
            continue;
        }
        grouped.extend(group.iter().cloned());
        let mut taken = BTreeSet::new();
        let mut cycles = Vec::new();
        for a in &group {
            for b in g[a].keys().filter(|b| group.contains(b)) {
                if taken.contains(&(a.clone(), b.clone())) {
                    continue;
                }
                let cycle = [vec![a.clone()], shortest(g, b, a)].concat();
                taken.extend(cycle.windows(2).map(|w| (w[0].clone(), w[1].clone())));
                cycles.push(cycle);
            }
        }
        out.push((group, cycles));
    }
    out
}

/// One block per group of `g`'s nodes in a circle that `title` names (`None`: not shown),
/// then each circle as a chain and, under it, the lines that make each of its edges.
fn describe<N: Ord + Clone, W>(
    g: &BTreeMap<N, BTreeMap<N, W>>,
    title: impl Fn(&[N]) -> Option<String>,
    label: impl Fn(&N) -> String,
    edge: impl Fn(&N, &N) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    for (group, cycles) in circles(g) {
        let Some(mut text) = title(&group) else {
            continue;
        };
        for cycle in cycles {
            let chain: Vec<String> = cycle.iter().map(&label).collect();
            text += &format!("\n    {}", chain.join(" -> "));
            for w in cycle.windows(2) {
                text += &format!("\n        {}", edge(&w[0], &w[1]));
            }
        }
        out.push(text);
    }
    out
}

/// `a.rs:12 -> b.rs: the line` for module `a` using `b` as `why` says.
fn quote(krate: &Crate, a: &ModPath, b: &ModPath, why: &Why) -> String {
    let (from, to) = (&krate.files[a], &krate.files[b]);
    let line = from.text.lines().nth(why.line - 1).unwrap_or("").trim();
    format!(
        "{}:{} -> {}: {line}{}",
        from.rel, why.line, to.rel, why.note
    )
}

/// Every circle of the crate at `name` whose sources (path under `src/`, text) are given.
fn report(name: &str, sources: &[(String, String)]) -> Vec<String> {
    let krate = parse(sources);
    let g = graph(&krate);
    let rel = |m: &ModPath| krate.files[m].rel.clone();
    let mut out = describe(
        &g,
        |group| {
            let files: Vec<String> = group.iter().map(rel).collect();
            Some(format!("{name}: modules in a circle: {}", files.join(", ")))
        },
        rel,
        |a, b| quote(&krate, a, b, &g[a][b]),
    );
    for (folder, entries) in folder_graphs(&g) {
        let is_dir = |e: &String| {
            let entry = [folder.clone(), vec![e.clone()]].concat();
            krate
                .files
                .keys()
                .any(|m| m.len() > entry.len() && m.starts_with(&entry))
        };
        let label = |e: &String| match is_dir(e) {
            true => format!("{}/", [folder.clone(), vec![e.clone()]].concat().join("/")),
            false => rel(&[folder.clone(), vec![e.clone()]].concat()),
        };
        out.extend(describe(
            &entries,
            |group| {
                let labels: Vec<String> = group.iter().map(label).collect();
                let shown = group.iter().any(is_dir); // files alone: a module circle above
                shown.then(|| format!("{name}: folder entries in a circle: {}", labels.join(", ")))
            },
            label,
            |a, b| {
                let quotes = entries[a][b]
                    .iter()
                    .map(|(from, to, why)| quote(&krate, from, to, why));
                quotes.collect::<Vec<_>>().join("\n        ")
            },
        ));
    }
    out
}

/// Each crate's source root: the binary's `src/` and every `crates/<name>/src`.
pub(crate) fn source_roots(root: &Path) -> Vec<PathBuf> {
    let mut roots = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        roots.push(entry.unwrap().path().join("src"));
    }
    roots.sort();
    roots
}

#[test]
fn no_crate_has_modules_or_folders_that_use_each_other_in_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for src in source_roots(root) {
        let name = src.strip_prefix(root).unwrap().display().to_string();
        found.extend(report(&name, &load(&src)));
    }
    assert!(
        found.is_empty(),
        "modules or folders of a crate use each other in a circle; move what both need into \
         a module both use, or an extension's methods to their type's module:\n{}",
        found.join("\n")
    );
}

#[cfg(test)]
mod checker {
    use super::*;

    fn graph_of(edges: &[(&str, &str)]) -> BTreeMap<String, BTreeMap<String, ()>> {
        let mut g: BTreeMap<String, BTreeMap<String, ()>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string())
                .or_default()
                .insert(b.to_string(), ());
        }
        g
    }

    fn sources(files: &[(&str, &str)]) -> Vec<(String, String)> {
        files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    }

    /// The edges of a synthetic crate, as `from.rs -> to.rs`.
    fn edges(files: &[(&str, &str)]) -> Vec<String> {
        let krate = parse(&sources(files));
        let g = graph(&krate);
        let rel = |m: &ModPath| krate.files[m].rel.clone();
        let pairs = g.iter().flat_map(|(a, o)| o.keys().map(move |b| (a, b)));
        pairs
            .map(|(a, b)| format!("{} -> {}", rel(a), rel(b)))
            .collect()
    }

    #[test]
    fn a_circle_is_found_and_a_chain_is_not() {
        assert!(circles(&graph_of(&[("a", "b"), ("b", "c")])).is_empty());
        let found = circles(&graph_of(&[("a", "b"), ("b", "a"), ("b", "c"), ("c", "a")]));
        let abc: Vec<String> = ["a", "b", "c"].map(String::from).into();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, abc);
        let chains: Vec<String> = found[0].1.iter().map(|c| c.join(">")).collect();
        assert_eq!(chains, ["a>b>a", "b>c>a>b"]);
    }

    #[test]
    fn paths_are_read_through_groups_super_aliases_and_reexports() {
        let got = edges(&[
            (
                "lib.rs",
                "pub mod mail;\nmod files;\nmod tasks;\npub use tasks::list::Task;",
            ),
            ("files.rs", "pub fn write() {}"),
            (
                "mail/mod.rs",
                "mod send;\nmod inbox;\npub use inbox::{Version, ack};",
            ),
            ("mail/inbox.rs", "pub struct Version; pub fn ack() {}"),
            (
                "mail/send.rs",
                "use super::{Version, ack as a};\nfn f() { crate::files::write() }",
            ),
            ("tasks/mod.rs", "pub mod list;\npub mod claim;"),
            ("tasks/list.rs", "pub struct Task;"),
            (
                "tasks/claim.rs",
                "use crate::mail;\nuse crate::Task;\nfn f() { mail::ack() }",
            ),
        ]);
        let want = [
            "mail/send.rs -> files.rs",
            "mail/send.rs -> mail/inbox.rs",
            "tasks/claim.rs -> mail/mod.rs",
            "tasks/claim.rs -> mail/inbox.rs",
            "tasks/claim.rs -> tasks/list.rs",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn comments_literals_and_tests_make_no_edge() {
        let got = edges(&[
            ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod c;"),
            (
                "a.rs",
                "// crate::b::f\nconst S: &str = \"crate::b::f\";\nconst R: &str = r#\"crate::b\"#;\nconst C: char = '\"';\nfn f() {}\n#[cfg(test)]\nmod tests { fn t() { crate::b::f() } }",
            ),
            (
                "b.rs",
                "/* crate::a /* nested */ crate::a */ pub fn f<'a>(x: &'a str) {}",
            ),
            ("c.rs", "use crate::a;"),
        ]);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn a_circle_across_folders_is_found_and_gone_once_cut() {
        let git = (
            "git/remote.rs",
            "pub fn push() { crate::spawn::remote::ssh_to() }",
        );
        let spawn = (
            "spawn/remote.rs",
            "use crate::git::remote;\npub fn ssh_to() {}\nfn f() { remote::push() }",
        );
        let mods = [
            ("lib.rs", "mod git;\nmod spawn;"),
            ("git/mod.rs", "pub mod remote;"),
            ("spawn/mod.rs", "pub mod remote;"),
        ];
        let with = |spawn| sources(&[mods[0], mods[1], mods[2], git, spawn]);
        let found = report("k", &with(spawn));
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].starts_with("k: modules in a circle: git/remote.rs, spawn/remote.rs"));
        assert!(found[0].contains("git/remote.rs:1 -> spawn/remote.rs: pub fn push()"));
        assert!(found[0].contains("spawn/remote.rs:1 -> git/remote.rs: use crate::git::remote;"));
        assert!(found[1].starts_with("k: folder entries in a circle: git/, spawn/"));
        let cut = ("spawn/remote.rs", "pub fn ssh_to() {}");
        assert!(report("k", &with(cut)).is_empty());
    }

    #[test]
    fn a_folder_circle_without_a_module_circle_is_found() {
        let files = [
            ("lib.rs", "mod git;\nmod life;"),
            ("git/mod.rs", "mod merge;\nmod worktree;"),
            ("git/merge.rs", "use crate::life::status;"),
            ("git/worktree.rs", ""),
            ("life/mod.rs", "mod status;\nmod resume;"),
            ("life/status.rs", ""),
            ("life/resume.rs", "use crate::git::worktree::add;"),
        ];
        let found = report("k", &sources(&files));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].contains("git/ -> life/ -> git/"), "{}", found[0]);
        assert!(
            found[0]
                .contains("life/resume.rs:1 -> git/worktree.rs: use crate::git::worktree::add;")
        );
    }

    #[test]
    fn an_extension_impl_is_a_hidden_edge() {
        let files = |send: &'static str| {
            sources(&[
                (
                    "lib.rs",
                    "pub mod layout;\npub mod lead_key;\npub mod mailbox;\npub use layout::Root;",
                ),
                (
                    "layout.rs",
                    "pub struct Root;\nimpl Root { pub fn new() -> Root { Root } }",
                ),
                (
                    "lead_key.rs",
                    "use crate::Root;\nuse crate::mailbox::Envelope;\nimpl Root {\n    pub fn seal_as_lead(&self, e: Envelope) {}\n}",
                ),
                (
                    "mailbox/mod.rs",
                    "mod envelope;\npub mod send;\npub use envelope::Envelope;",
                ),
                ("mailbox/envelope.rs", "pub struct Envelope;"),
                ("mailbox/send.rs", send),
            ])
        };
        let call = "use crate::layout::Root;\nfn send(root: &Root) {\n    root.seal_as_lead(x);\n}";
        let found = report("k", &files(call));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("k: folder entries in a circle: lead_key.rs, mailbox/"));
        assert!(found[0].contains(
            "mailbox/send.rs:3 -> lead_key.rs: root.seal_as_lead(x); (Root::seal_as_lead is in lead_key.rs's impl Root)"
        ));
        let by_path = "fn send(root: &crate::Root) { crate::Root::seal_as_lead(root, x) }";
        assert_eq!(report("k", &files(by_path)).len(), 1);
        let other = "struct Other;\nimpl Other { fn seal_as_lead(&self) {} }\nfn send(o: &Other) { o.seal_as_lead() }";
        assert!(report("k", &files(other)).is_empty());
        assert!(report("k", &files("fn send(root: &crate::Root) {}")).is_empty());
    }
}
