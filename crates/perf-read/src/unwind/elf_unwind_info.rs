//! The unwind information of one ELF file as `framehop` wants it: the `.eh_frame`,
//! `.eh_frame_hdr` (or `.debug_frame`), `.text` and `.got` sections, read once per file and
//! shared by every process that maps the file, and how a mapping of the file relates its
//! addresses to the file's own (`base_avma`).

use std::fs::File;
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

use framehop::{ExplicitModuleSectionInfo, Module};
use object::read::elf::ElfFile64;
use object::{Endianness, Object, ObjectSection, ObjectSegment, ReadCache};

/// `.text` sections larger than this are not kept: the unwinder only looks at code to find
/// prologues and epilogues of the leaf frame, and a large executable's code would cost more
/// memory than that is worth.
const MAX_TEXT_BYTES: u64 = 32 << 20;

/// A section's bytes, shared.
#[derive(Debug, Clone)]
pub(crate) struct SectionBytes(Arc<[u8]>);

impl Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// One section: where the file says it lives, and its bytes.
#[derive(Debug, Clone)]
struct Section {
    svma: Range<u64>,
    bytes: SectionBytes,
}

/// A loadable segment: its file offset and its stated address.
#[derive(Debug, Clone, Copy)]
struct Segment {
    offset: u64,
    size: u64,
    svma: u64,
    exec: bool,
}

/// The page size mappings are aligned to.
const PAGE: u64 = 4096;

/// The unwind sections and load segments of one ELF file.
#[derive(Debug, Clone)]
pub(crate) struct ElfUnwindInfo {
    eh_frame: Option<Section>,
    eh_frame_hdr: Option<Section>,
    debug_frame: Option<Section>,
    text: Option<Section>,
    got: Option<Range<u64>>,
    segments: Vec<Segment>,
}

impl ElfUnwindInfo {
    /// Reads the sections of the ELF file at `path`, or `None` when it is not a readable
    /// 64-bit ELF file or has no unwind information.
    pub(crate) fn read(path: &Path) -> Option<ElfUnwindInfo> {
        sys::check_input(path, sys::InputKind::Elf).ok()?;
        let file = File::open(path).ok()?;
        let cache = ReadCache::new(file);
        let elf = ElfFile64::<Endianness, _>::parse(&cache).ok()?;
        let section = |name: &str, limit: u64| -> Option<Section> {
            let s = elf.section_by_name(name)?;
            if s.size() > limit {
                return None;
            }
            let bytes = s.data().ok()?;
            if bytes.is_empty() {
                return None;
            }
            Some(Section {
                svma: s.address()..s.address() + s.size(),
                bytes: SectionBytes(Arc::from(bytes)),
            })
        };
        let eh_frame = section(".eh_frame", u64::MAX);
        let eh_frame_hdr = section(".eh_frame_hdr", u64::MAX);
        // .debug_frame only where .eh_frame is missing (code built with
        // -fno-asynchronous-unwind-tables keeps its CFI there).
        let debug_frame = if eh_frame.is_none() {
            section(".debug_frame", u64::MAX)
        } else {
            None
        };
        if eh_frame.is_none() && debug_frame.is_none() {
            return None;
        }
        let text = section(".text", MAX_TEXT_BYTES);
        let got = elf
            .section_by_name(".got")
            .map(|s| s.address()..s.address() + s.size());
        let segments = elf
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                let exec = matches!(
                    s.flags(),
                    object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0
                );
                Segment {
                    offset,
                    size,
                    svma: s.address(),
                    exec,
                }
            })
            .collect();
        Some(ElfUnwindInfo {
            eh_frame,
            eh_frame_hdr,
            debug_frame,
            text,
            got,
            segments,
        })
    }

    /// The stated address of file offset `offset` of a mapping (page-aligned, so it may lie
    /// before its segment's first byte: the linker packs segments, so the executable one often
    /// starts mid-page, after the end of the read-only one), through the load segment holding
    /// it, the executable one first.
    pub(crate) fn svma_of_offset(&self, offset: u64) -> Option<u64> {
        let holds = |s: &&Segment| {
            offset >= s.offset & !(PAGE - 1) && offset < s.offset.saturating_add(s.size.max(1))
        };
        self.segments
            .iter()
            .filter(holds)
            .max_by_key(|s| s.exec)
            .map(|s| s.svma.wrapping_add(offset).wrapping_sub(s.offset))
    }

    /// A `framehop` module for a mapping of this file at `avma` from file offset `offset`.
    pub(crate) fn module(
        &self,
        name: &str,
        avma: Range<u64>,
        offset: u64,
    ) -> Option<Module<SectionBytes>> {
        // A process address a = base_avma + svma: the mapping's start is the file offset's
        // stated address.
        let base_avma = avma.start.wrapping_sub(self.svma_of_offset(offset)?);
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.text.as_ref().map(|s| s.svma.clone()),
            text: self.text.as_ref().map(|s| s.bytes.clone()),
            got_svma: self.got.clone(),
            eh_frame_svma: self.eh_frame.as_ref().map(|s| s.svma.clone()),
            eh_frame: self.eh_frame.as_ref().map(|s| s.bytes.clone()),
            eh_frame_hdr_svma: self.eh_frame_hdr.as_ref().map(|s| s.svma.clone()),
            eh_frame_hdr: self.eh_frame_hdr.as_ref().map(|s| s.bytes.clone()),
            debug_frame: self.debug_frame.as_ref().map(|s| s.bytes.clone()),
            stubs_svma: None,
            stub_helper_svma: None,
            unwind_info: None,
            text_segment_svma: None,
            text_segment: None,
        };
        Some(Module::new(name.to_string(), avma, base_avma, info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_library_has_unwind_info_and_maps_offsets_to_addresses() {
        let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
        if !libc.exists() {
            eprintln!("skipped: no {}", libc.display());
            return;
        }
        let info = ElfUnwindInfo::read(libc).expect("libc has .eh_frame");
        assert!(info.eh_frame.is_some() && info.eh_frame_hdr.is_some());
        // A shared library's first segment maps offset 0 at address 0.
        assert_eq!(info.svma_of_offset(0), Some(0));
        // Its code segment's mapping starts at the page holding the segment's first byte.
        let code = info.segments.iter().find(|s| s.exec).unwrap();
        let page = code.offset & !(PAGE - 1);
        assert_eq!(
            info.svma_of_offset(page),
            Some(code.svma - (code.offset - page))
        );
        assert!(
            info.module("libc", 0x7f00_0000_0000..0x7f00_0010_0000, 0)
                .is_some()
        );
    }

    /// Was: a binary whose code segment starts mid-page (a large Rust executable: offset
    /// 0x473c50 at address 0x474c50) had its mapping's page (offset 0x473000) taken as the end
    /// of the read-only segment, so its module sat 0x1000 off and its frames unwound wrongly.
    #[test]
    fn a_mapping_of_a_code_segment_starting_mid_page_gets_the_code_segments_address() {
        let seg = |offset, size, svma, exec| Segment {
            offset,
            size,
            svma,
            exec,
        };
        let info = ElfUnwindInfo {
            eh_frame: None,
            eh_frame_hdr: None,
            debug_frame: None,
            text: None,
            got: None,
            segments: vec![
                seg(0, 0x47_3c48, 0, false),
                seg(0x47_3c50, 0xc3_7490, 0x47_4c50, true),
            ],
        };
        assert_eq!(info.svma_of_offset(0x47_3000), Some(0x47_4000));
        assert_eq!(info.svma_of_offset(0), Some(0));
    }

    #[test]
    fn a_file_that_is_not_elf_has_no_unwind_info() {
        assert!(ElfUnwindInfo::read(Path::new("/proc/self/status")).is_none());
        assert!(ElfUnwindInfo::read(Path::new("/nonexistent/file")).is_none());
    }
}
