//! What a built binary asks of the machine that loads it, read from its headers with the `object`
//! crate, and the floors we ship checked against it (docs/DEVELOPMENT.md, "Every target"):
//!
//! - ELF: the libraries it needs (`DT_NEEDED`), whether it asks for an interpreter, and the newest
//!   symbol version it needs of each family (`GLIBC_2.17`, `GCC_3.0`, …, from `.gnu.version_r`):
//!   a glibc older than that refuses to load it.
//! - Mach-O: the dylibs it loads, its minimum macOS (`LC_BUILD_VERSION` or
//!   `LC_VERSION_MIN_MACOSX`), and whether it carries a code signature (arm64 macOS kills an
//!   unsigned binary; an ad hoc signature is enough).
//! - PE: the DLLs it imports (normal and delay-loaded).

use std::collections::BTreeMap;
use std::fmt;

use object::elf;
use object::macho;
use object::read::elf::{Dyn, ElfFile, FileHeader, ProgramHeader, Sym};
use object::read::macho::{LoadCommandVariant, MachHeader, MachOFile};
use object::read::pe::{ImageNtHeaders, PeFile};
use object::{Endianness, FileKind};

/// A dotted version, compared numerically part by part (`2.9` < `2.17`; a missing part is 0).
#[derive(Clone, Debug)]
pub struct Version(pub Vec<u32>);

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Version {}

impl Version {
    pub fn parse(text: &str) -> Option<Version> {
        let parts: Option<Vec<u32>> = text.split('.').map(|part| part.parse().ok()).collect();
        parts.filter(|parts| !parts.is_empty()).map(Version)
    }

    fn part(&self, index: usize) -> u32 {
        self.0.get(index).copied().unwrap_or(0)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let len = self.0.len().max(other.0.len());
        (0..len)
            .map(|i| self.part(i).cmp(&other.part(i)))
            .find(|order| order.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&parts.join("."))
    }
}

#[derive(Debug, Default)]
pub struct Facts {
    /// `ELF`, `Mach-O` or `PE`, with the machine.
    pub format: String,
    /// `DT_NEEDED`, the dylibs loaded, or the DLLs imported.
    pub needed: Vec<String>,
    /// ELF: whether it asks for a program interpreter (not static).
    pub interpreter: bool,
    /// ELF: the newest version needed per family (`GLIBC` → 2.17), and names that are no
    /// `FAMILY_x.y` (`GLIBC_PRIVATE`).
    pub versions: BTreeMap<String, Version>,
    pub odd_versions: Vec<String>,
    /// ELF with symbol versions: the undefined, non-weak dynamic symbols that carry no version.
    /// The link found them in no library it was given, so the loader will look for them anywhere.
    pub unversioned: Vec<String>,
    /// Mach-O: the minimum macOS, and whether `LC_CODE_SIGNATURE` is there.
    pub minos: Option<Version>,
    pub code_signature: bool,
}

/// Reads the facts from a file's bytes; an error names what could not be read.
pub fn facts(data: &[u8]) -> Result<Facts, String> {
    let kind = FileKind::parse(data).map_err(|e| format!("not a binary we know: {e}"))?;
    let result = match kind {
        FileKind::Elf64 => elf_facts::<elf::FileHeader64<Endianness>>(data),
        FileKind::Elf32 => elf_facts::<elf::FileHeader32<Endianness>>(data),
        FileKind::MachO64 => macho_facts::<macho::MachHeader64<Endianness>>(data),
        FileKind::MachO32 => macho_facts::<macho::MachHeader32<Endianness>>(data),
        FileKind::Pe64 => pe_facts::<object::pe::ImageNtHeaders64>(data),
        FileKind::Pe32 => pe_facts::<object::pe::ImageNtHeaders32>(data),
        other => return Err(format!("{other:?} files are not checked here")),
    };
    result.map_err(|e| format!("malformed headers: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn elf_facts<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> object::Result<Facts> {
    let file = ElfFile::<Elf>::parse(data)?;
    let endian = file.endian();
    let sections = file.elf_section_table();
    let mut facts = Facts {
        format: format!("ELF {:?}", object::Object::architecture(&file)),
        ..Facts::default()
    };
    facts.interpreter = file
        .elf_program_headers()
        .iter()
        .any(|header| header.p_type(endian) == elf::PT_INTERP);
    if let Some((entries, link)) = sections.dynamic(endian, data)? {
        let strings = sections.strings(endian, data, link)?;
        for entry in entries {
            if entry.tag(endian) == elf::DT_NEEDED {
                facts.needed.push(text(entry.string(endian, strings)?));
            }
        }
    }
    if let Some((versym, _)) = sections.gnu_versym(endian, data)? {
        let symbols = sections.symbols(endian, data, elf::SHT_DYNSYM)?;
        for (index, symbol) in symbols.enumerate() {
            let version = versym.get(index.0).map(|v| v.0.get(endian));
            let unversioned = version.is_none_or(|v| v.is_local() || v.is_global());
            if symbol.is_undefined(endian) && symbol.st_bind() != elf::STB_WEAK && unversioned {
                let name = text(symbol.name(endian, symbols.strings())?);
                if !name.is_empty() {
                    facts.unversioned.push(name);
                }
            }
        }
    }
    if let Some((mut needs, link)) = sections.gnu_verneed(endian, data)? {
        let strings = sections.strings(endian, data, link)?;
        while let Some((_, mut auxes)) = needs.next()? {
            while let Some(aux) = auxes.next()? {
                let name = text(aux.name(endian, strings)?);
                match name.split_once('_').and_then(|(family, version)| {
                    Some((family.to_owned(), Version::parse(version)?))
                }) {
                    Some((family, version)) => {
                        let newest = facts.versions.entry(family).or_insert(version.clone());
                        if version > *newest {
                            *newest = version;
                        }
                    }
                    None => facts.odd_versions.push(name),
                }
            }
        }
    }
    Ok(facts)
}

fn macho_version(version: macho::Version) -> Version {
    Version(vec![
        u32::from(version.major()),
        u32::from(version.minor()),
        u32::from(version.update()),
    ])
}

fn macho_facts<Mach: MachHeader<Endian = Endianness>>(data: &[u8]) -> object::Result<Facts> {
    let file = MachOFile::<Mach>::parse(data)?;
    let endian = file.endian();
    let mut facts = Facts {
        format: format!("Mach-O {:?}", object::Object::architecture(&file)),
        ..Facts::default()
    };
    let mut commands = file.macho_load_commands()?;
    while let Some(command) = commands.next()? {
        if command.cmd() == macho::LC_CODE_SIGNATURE {
            facts.code_signature = true;
        }
        match command.variant()? {
            LoadCommandVariant::Dylib(dylib) => {
                facts
                    .needed
                    .push(text(command.string(endian, dylib.dylib.name)?));
            }
            LoadCommandVariant::BuildVersion(build, _) => {
                facts.minos = Some(macho_version(build.minos.get(endian)));
            }
            LoadCommandVariant::VersionMin(min)
                if command.cmd() == macho::LC_VERSION_MIN_MACOSX =>
            {
                facts.minos = Some(macho_version(min.version.get(endian)));
            }
            _ => {}
        }
    }
    Ok(facts)
}

fn pe_facts<Pe: ImageNtHeaders>(data: &[u8]) -> object::Result<Facts> {
    let file = PeFile::<Pe>::parse(data)?;
    let mut facts = Facts {
        format: format!("PE {:?}", object::Object::architecture(&file)),
        ..Facts::default()
    };
    if let Some(imports) = file.import_table()? {
        let mut descriptors = imports.descriptors()?;
        while let Some(descriptor) = descriptors.next()? {
            facts.needed.push(text(
                imports.name(descriptor.name.get(object::LittleEndian))?,
            ));
        }
    }
    if let Some(imports) = file.delay_load_import_table()? {
        let mut descriptors = imports.descriptors()?;
        while let Some(descriptor) = descriptors.next()? {
            facts.needed.push(text(
                imports.name(descriptor.dll_name_rva.get(object::LittleEndian))?,
            ));
        }
    }
    // mingw's import libraries give a DLL one descriptor per archive member: name each once.
    let mut seen = std::collections::HashSet::new();
    facts
        .needed
        .retain(|dll| seen.insert(dll.to_ascii_lowercase()));
    Ok(facts)
}

/// What a target's binaries may ask for: `linux-gnu`, `linux-musl`, `darwin-arm64`, `darwin-x64`
/// or `windows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Floor {
    LinuxGnu,
    LinuxMusl,
    DarwinArm64,
    DarwinX64,
    Windows,
}

/// The newest symbol version a linux-gnu binary may need, per family: napi-rs's floor, glibc 2.17
/// (manylinux2014: CentOS 7, whose GCC 4.8 sets the libgcc_s and libstdc++ ones).
pub const GNU_CEILINGS: &[(&str, &str)] = &[
    ("GLIBC", "2.17"),
    ("GCC", "4.8.0"),
    ("GLIBCXX", "3.4.19"),
    ("CXXABI", "1.3.7"),
];

/// The libraries a linux-gnu binary may need: the C library's own parts, which every glibc system
/// has (no libssl: reqwest uses rustls).
const GNU_LIBRARIES: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libgcc_s.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
];

/// The DLLs every Windows 10 has that the addon may import (`api-ms-win-*` are Windows' own API
/// sets). mingw's runtime DLLs (libgcc_s_seh-1.dll, libwinpthread-1.dll) are on no user's machine.
const WINDOWS_DLLS: &[&str] = &[
    "advapi32.dll",
    "bcrypt.dll",
    "bcryptprimitives.dll",
    "crypt32.dll",
    "kernel32.dll",
    "msvcrt.dll",
    "ntdll.dll",
    "ole32.dll",
    "oleaut32.dll",
    "secur32.dll",
    "shell32.dll",
    "user32.dll",
    "userenv.dll",
    "ws2_32.dll",
];

impl Floor {
    pub fn parse(name: &str) -> Option<Floor> {
        Some(match name {
            "linux-gnu" => Floor::LinuxGnu,
            "linux-musl" => Floor::LinuxMusl,
            "darwin-arm64" => Floor::DarwinArm64,
            "darwin-x64" => Floor::DarwinX64,
            "windows" => Floor::Windows,
            _ => return None,
        })
    }

    /// The oldest macOS each darwin target must load on: 11.0 is the first macOS on arm64, and
    /// 10.15 the oldest that Node 20 (package.json `engines`) supports on x64.
    pub fn macos_minimum(self) -> Option<Version> {
        match self {
            Floor::DarwinArm64 => Version::parse("11.0"),
            Floor::DarwinX64 => Version::parse("10.15"),
            _ => None,
        }
    }

    /// Every way `facts` asks for more than this floor allows; empty when it is fine.
    pub fn violations(self, facts: &Facts) -> Vec<String> {
        let format = facts.format.split(' ').next().unwrap_or_default();
        let expected = match self {
            Floor::LinuxGnu | Floor::LinuxMusl => "ELF",
            Floor::DarwinArm64 | Floor::DarwinX64 => "Mach-O",
            Floor::Windows => "PE",
        };
        if format != expected {
            return vec![format!("is {}, not {expected}", facts.format)];
        }
        match self {
            Floor::LinuxGnu => gnu_violations(facts),
            Floor::LinuxMusl => musl_violations(facts),
            Floor::DarwinArm64 | Floor::DarwinX64 => self.darwin_violations(facts),
            Floor::Windows => windows_violations(facts),
        }
    }

    fn darwin_violations(self, facts: &Facts) -> Vec<String> {
        let mut wrong = Vec::new();
        let minimum = self.macos_minimum();
        match (&facts.minos, &minimum) {
            (None, _) => wrong.push("has no LC_BUILD_VERSION or LC_VERSION_MIN_MACOSX".into()),
            (Some(minos), Some(minimum)) if minos > minimum => wrong.push(format!(
                "needs macOS {minos}, newer than the floor {minimum}"
            )),
            _ => {}
        }
        // arm64 macOS kills unsigned code; x64 macOS runs it (zig signs arm64 output
        // only, and there is no signing tool here: docs/DEVELOPMENT.md).
        if !facts.code_signature && self == Floor::DarwinArm64 {
            wrong.push("has no LC_CODE_SIGNATURE (arm64 macOS kills unsigned code)".into());
        }
        for lib in &facts.needed {
            if !(lib.starts_with("/usr/lib/") || lib.starts_with("/System/")) {
                wrong.push(format!("loads {lib}, which is not part of macOS"));
            }
        }
        wrong
    }
}

fn gnu_violations(facts: &Facts) -> Vec<String> {
    let mut wrong = Vec::new();
    for lib in &facts.needed {
        if !GNU_LIBRARIES.contains(&lib.as_str()) {
            wrong.push(format!("needs {lib}, which a glibc system may lack"));
        }
    }
    for (family, version) in &facts.versions {
        let ceiling = GNU_CEILINGS
            .iter()
            .find(|(name, _)| name == family)
            .and_then(|(_, ceiling)| Version::parse(ceiling));
        match ceiling {
            Some(ceiling) if *version > ceiling => wrong.push(format!(
                "needs {family}_{version}, newer than the floor {family}_{ceiling}"
            )),
            Some(_) => {}
            None => wrong.push(format!(
                "needs {family}_{version}, a family with no floor here"
            )),
        }
    }
    for name in &facts.odd_versions {
        wrong.push(format!("needs the symbol version {name}"));
    }
    // N-API's functions come from node itself, unversioned; anything else with no
    // version was found in no library at link time: a glibc without it (gettid()
    // before 2.30) fails when it is called.
    for name in &facts.unversioned {
        if !(name.starts_with("napi_") || name.starts_with("node_api_")) {
            wrong.push(format!("calls {name}, which no library it links provides"));
        }
    }
    wrong
}

fn musl_violations(facts: &Facts) -> Vec<String> {
    let mut wrong = Vec::new();
    for lib in &facts.needed {
        if lib != "libc.so" {
            wrong.push(format!("needs {lib}; a musl system has only libc.so"));
        }
    }
    if !facts.versions.is_empty() || !facts.odd_versions.is_empty() {
        wrong.push("needs versioned symbols: musl has none (linked against glibc?)".into());
    }
    wrong
}

fn windows_violations(facts: &Facts) -> Vec<String> {
    facts
        .needed
        .iter()
        .filter(|dll| {
            let lower = dll.to_ascii_lowercase();
            !(WINDOWS_DLLS.contains(&lower.as_str()) || lower.starts_with("api-ms-win-"))
        })
        .map(|dll| format!("imports {dll}, which is not one of Windows' own DLLs"))
        .collect()
}

impl fmt::Display for Facts {
    /// One line: format, needs, the newest version per family, minos, signature.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.format)?;
        if self.format.starts_with("ELF") {
            let linking = match (self.interpreter, self.needed.is_empty()) {
                (true, _) => "dynamic executable",
                (false, true) => "static",
                (false, false) => "shared library",
            };
            write!(f, ", {linking}")?;
        }
        let needed = if self.needed.is_empty() {
            "nothing".to_owned()
        } else {
            self.needed.join(" ")
        };
        write!(f, "; needs {needed}")?;
        if !self.versions.is_empty() || !self.odd_versions.is_empty() {
            let mut newest: Vec<String> = self
                .versions
                .iter()
                .map(|(family, version)| format!("{family}_{version}"))
                .collect();
            newest.extend(self.odd_versions.iter().cloned());
            write!(f, "; newest symbol versions {}", newest.join(" "))?;
        }
        if let Some(minos) = &self.minos {
            write!(f, "; minos {minos}")?;
        }
        if self.format.starts_with("Mach-O") {
            let signed = if self.code_signature {
                "code signature"
            } else {
                "NO code signature"
            };
            write!(f, "; {signed}")?;
        }
        Ok(())
    }
}
