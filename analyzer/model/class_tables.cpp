#include "model/class_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "allocscope/buckets.h"

namespace allocscope {

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// Every table below has the columns of SizeClass:
//
//   lo, hi     requests (bytes asked of malloc) that the allocator serves from this class
//   slot_size  the block serving a request of size hi, in-band header included; 0 = sized per
//              request (page runs, mmap): no fixed slot
//   label      the allocator's own name for the class where it has one
//
// Rows are contiguous from 0 to 2^64-1 (tested).  Behaviour that depends on run-time state
// (thresholds that move, classes borrowed while a class is empty) is noted in each legend; the
// rows give the default, steady-state mapping.  The unit tests re-derive every table from the
// allocator's own algorithm, and compare it with malloc_usable_size of the installed library
// where that reports the slot (glibc, jemalloc, tcmalloc, mimalloc).

// ---- musl mallocng (musl 1.2.3 and 1.2.5: src/malloc/mallocng/{malloc.c,meta.h}) ----
// 48 classes; class i has slots of size_classes[i] 16-byte units (the slot includes the 4-byte
// in-band header IB).  size_to_class(n) picks the smallest class whose slot holds n + 4 bytes,
// so hi = 16*units - 4.  Requests >= MMAP_THRESHOLD (131052) are mmapped individually.
// Not modelled: while an even class in 4..31 (except 6) has no group yet, malloc borrows the
// next odd (coarser) class for its first few requests.
constexpr SizeClass kMusl[] = {
    //     lo        hi      slot   label
    {       0,       12,       16, "class 0 (16 B)"},
    {      13,       28,       32, "class 1 (32 B)"},
    {      29,       44,       48, "class 2 (48 B)"},
    {      45,       60,       64, "class 3 (64 B)"},
    {      61,       76,       80, "class 4 (80 B)"},
    {      77,       92,       96, "class 5 (96 B)"},
    {      93,      108,      112, "class 6 (112 B)"},
    {     109,      124,      128, "class 7 (128 B)"},
    {     125,      140,      144, "class 8 (144 B)"},
    {     141,      156,      160, "class 9 (160 B)"},
    {     157,      188,      192, "class 10 (192 B)"},
    {     189,      236,      240, "class 11 (240 B)"},
    {     237,      284,      288, "class 12 (288 B)"},
    {     285,      316,      320, "class 13 (320 B)"},
    {     317,      396,      400, "class 14 (400 B)"},
    {     397,      492,      496, "class 15 (496 B)"},
    {     493,      572,      576, "class 16 (576 B)"},
    {     573,      668,      672, "class 17 (672 B)"},
    {     669,      796,      800, "class 18 (800 B)"},
    {     797,     1004,     1008, "class 19 (1008 B)"},
    {    1005,     1148,     1152, "class 20 (1152 B)"},
    {    1149,     1340,     1344, "class 21 (1344 B)"},
    {    1341,     1628,     1632, "class 22 (1632 B)"},
    {    1629,     2028,     2032, "class 23 (2032 B)"},
    {    2029,     2332,     2336, "class 24 (2336 B)"},
    {    2333,     2716,     2720, "class 25 (2720 B)"},
    {    2717,     3260,     3264, "class 26 (3264 B)"},
    {    3261,     4076,     4080, "class 27 (4080 B)"},
    {    4077,     4668,     4672, "class 28 (4672 B)"},
    {    4669,     5436,     5440, "class 29 (5440 B)"},
    {    5437,     6540,     6544, "class 30 (6544 B)"},
    {    6541,     8172,     8176, "class 31 (8176 B)"},
    {    8173,     9340,     9344, "class 32 (9344 B)"},
    {    9341,    10908,    10912, "class 33 (10912 B)"},
    {   10909,    13084,    13088, "class 34 (13088 B)"},
    {   13085,    16364,    16368, "class 35 (16368 B)"},
    {   16365,    18700,    18704, "class 36 (18704 B)"},
    {   18701,    21820,    21824, "class 37 (21824 B)"},
    {   21821,    26188,    26192, "class 38 (26192 B)"},
    {   26189,    32748,    32752, "class 39 (32752 B)"},
    {   32749,    37436,    37440, "class 40 (37440 B)"},
    {   37437,    43676,    43680, "class 41 (43680 B)"},
    {   43677,    52412,    52416, "class 42 (52416 B)"},
    {   52413,    65516,    65520, "class 43 (65520 B)"},
    {   65517,    74876,    74880, "class 44 (74880 B)"},
    {   74877,    87356,    87360, "class 45 (87360 B)"},
    {   87357,   104828,   104832, "class 46 (104832 B)"},
    {  104829,   131051,   131056, "class 47 (131056 B)"},
    {  131052,     kMax,        0, "mmap"},
};

// ---- glibc malloc (glibc 2.36, x86_64: malloc/malloc.c) ----
// A request n takes a chunk of max(32, (n + 8 + 15) & ~15) bytes (8 = the size field, SIZE_SZ;
// the usable size is chunk - 8).  One class per chunk size up to 1040, the largest chunk the
// per-thread tcache holds (tcache_max_bytes: requests <= 1032); chunks <= 128 are also fastbin
// sizes (default global_max_fast), chunks < 1024 smallbin sizes.  Then the largebins (the
// chunk ranges of largebin_index_64; largebin 64 minus its tcache sizes first), each row's
// slot being its largest chunk.  Requests whose chunk reaches the mmap threshold (128 KiB by
// default: requests >= 131049) are mmapped — unless the top chunk can serve them.  The threshold
// is dynamic: freeing an mmapped chunk raises it to that chunk's size (up to 32 MiB), after
// which larger requests fall in largebins not listed here.
constexpr SizeClass kGlibc[] = {
    //     lo        hi      slot   label
    {       0,       24,       32, "chunk 32 (tcache, fastbin)"},
    {      25,       40,       48, "chunk 48 (tcache, fastbin)"},
    {      41,       56,       64, "chunk 64 (tcache, fastbin)"},
    {      57,       72,       80, "chunk 80 (tcache, fastbin)"},
    {      73,       88,       96, "chunk 96 (tcache, fastbin)"},
    {      89,      104,      112, "chunk 112 (tcache, fastbin)"},
    {     105,      120,      128, "chunk 128 (tcache, fastbin)"},
    {     121,      136,      144, "chunk 144 (tcache, smallbin)"},
    {     137,      152,      160, "chunk 160 (tcache, smallbin)"},
    {     153,      168,      176, "chunk 176 (tcache, smallbin)"},
    {     169,      184,      192, "chunk 192 (tcache, smallbin)"},
    {     185,      200,      208, "chunk 208 (tcache, smallbin)"},
    {     201,      216,      224, "chunk 224 (tcache, smallbin)"},
    {     217,      232,      240, "chunk 240 (tcache, smallbin)"},
    {     233,      248,      256, "chunk 256 (tcache, smallbin)"},
    {     249,      264,      272, "chunk 272 (tcache, smallbin)"},
    {     265,      280,      288, "chunk 288 (tcache, smallbin)"},
    {     281,      296,      304, "chunk 304 (tcache, smallbin)"},
    {     297,      312,      320, "chunk 320 (tcache, smallbin)"},
    {     313,      328,      336, "chunk 336 (tcache, smallbin)"},
    {     329,      344,      352, "chunk 352 (tcache, smallbin)"},
    {     345,      360,      368, "chunk 368 (tcache, smallbin)"},
    {     361,      376,      384, "chunk 384 (tcache, smallbin)"},
    {     377,      392,      400, "chunk 400 (tcache, smallbin)"},
    {     393,      408,      416, "chunk 416 (tcache, smallbin)"},
    {     409,      424,      432, "chunk 432 (tcache, smallbin)"},
    {     425,      440,      448, "chunk 448 (tcache, smallbin)"},
    {     441,      456,      464, "chunk 464 (tcache, smallbin)"},
    {     457,      472,      480, "chunk 480 (tcache, smallbin)"},
    {     473,      488,      496, "chunk 496 (tcache, smallbin)"},
    {     489,      504,      512, "chunk 512 (tcache, smallbin)"},
    {     505,      520,      528, "chunk 528 (tcache, smallbin)"},
    {     521,      536,      544, "chunk 544 (tcache, smallbin)"},
    {     537,      552,      560, "chunk 560 (tcache, smallbin)"},
    {     553,      568,      576, "chunk 576 (tcache, smallbin)"},
    {     569,      584,      592, "chunk 592 (tcache, smallbin)"},
    {     585,      600,      608, "chunk 608 (tcache, smallbin)"},
    {     601,      616,      624, "chunk 624 (tcache, smallbin)"},
    {     617,      632,      640, "chunk 640 (tcache, smallbin)"},
    {     633,      648,      656, "chunk 656 (tcache, smallbin)"},
    {     649,      664,      672, "chunk 672 (tcache, smallbin)"},
    {     665,      680,      688, "chunk 688 (tcache, smallbin)"},
    {     681,      696,      704, "chunk 704 (tcache, smallbin)"},
    {     697,      712,      720, "chunk 720 (tcache, smallbin)"},
    {     713,      728,      736, "chunk 736 (tcache, smallbin)"},
    {     729,      744,      752, "chunk 752 (tcache, smallbin)"},
    {     745,      760,      768, "chunk 768 (tcache, smallbin)"},
    {     761,      776,      784, "chunk 784 (tcache, smallbin)"},
    {     777,      792,      800, "chunk 800 (tcache, smallbin)"},
    {     793,      808,      816, "chunk 816 (tcache, smallbin)"},
    {     809,      824,      832, "chunk 832 (tcache, smallbin)"},
    {     825,      840,      848, "chunk 848 (tcache, smallbin)"},
    {     841,      856,      864, "chunk 864 (tcache, smallbin)"},
    {     857,      872,      880, "chunk 880 (tcache, smallbin)"},
    {     873,      888,      896, "chunk 896 (tcache, smallbin)"},
    {     889,      904,      912, "chunk 912 (tcache, smallbin)"},
    {     905,      920,      928, "chunk 928 (tcache, smallbin)"},
    {     921,      936,      944, "chunk 944 (tcache, smallbin)"},
    {     937,      952,      960, "chunk 960 (tcache, smallbin)"},
    {     953,      968,      976, "chunk 976 (tcache, smallbin)"},
    {     969,      984,      992, "chunk 992 (tcache, smallbin)"},
    {     985,     1000,     1008, "chunk 1008 (tcache, smallbin)"},
    {    1001,     1016,     1024, "chunk 1024 (tcache, largebin 64)"},
    {    1017,     1032,     1040, "chunk 1040 (tcache, largebin 64)"},
    {    1033,     1064,     1072, "largebin 64 (chunks 1056-1087)"},
    {    1065,     1128,     1136, "largebin 65 (chunks 1088-1151)"},
    {    1129,     1192,     1200, "largebin 66 (chunks 1152-1215)"},
    {    1193,     1256,     1264, "largebin 67 (chunks 1216-1279)"},
    {    1257,     1320,     1328, "largebin 68 (chunks 1280-1343)"},
    {    1321,     1384,     1392, "largebin 69 (chunks 1344-1407)"},
    {    1385,     1448,     1456, "largebin 70 (chunks 1408-1471)"},
    {    1449,     1512,     1520, "largebin 71 (chunks 1472-1535)"},
    {    1513,     1576,     1584, "largebin 72 (chunks 1536-1599)"},
    {    1577,     1640,     1648, "largebin 73 (chunks 1600-1663)"},
    {    1641,     1704,     1712, "largebin 74 (chunks 1664-1727)"},
    {    1705,     1768,     1776, "largebin 75 (chunks 1728-1791)"},
    {    1769,     1832,     1840, "largebin 76 (chunks 1792-1855)"},
    {    1833,     1896,     1904, "largebin 77 (chunks 1856-1919)"},
    {    1897,     1960,     1968, "largebin 78 (chunks 1920-1983)"},
    {    1961,     2024,     2032, "largebin 79 (chunks 1984-2047)"},
    {    2025,     2088,     2096, "largebin 80 (chunks 2048-2111)"},
    {    2089,     2152,     2160, "largebin 81 (chunks 2112-2175)"},
    {    2153,     2216,     2224, "largebin 82 (chunks 2176-2239)"},
    {    2217,     2280,     2288, "largebin 83 (chunks 2240-2303)"},
    {    2281,     2344,     2352, "largebin 84 (chunks 2304-2367)"},
    {    2345,     2408,     2416, "largebin 85 (chunks 2368-2431)"},
    {    2409,     2472,     2480, "largebin 86 (chunks 2432-2495)"},
    {    2473,     2536,     2544, "largebin 87 (chunks 2496-2559)"},
    {    2537,     2600,     2608, "largebin 88 (chunks 2560-2623)"},
    {    2601,     2664,     2672, "largebin 89 (chunks 2624-2687)"},
    {    2665,     2728,     2736, "largebin 90 (chunks 2688-2751)"},
    {    2729,     2792,     2800, "largebin 91 (chunks 2752-2815)"},
    {    2793,     2856,     2864, "largebin 92 (chunks 2816-2879)"},
    {    2857,     2920,     2928, "largebin 93 (chunks 2880-2943)"},
    {    2921,     2984,     2992, "largebin 94 (chunks 2944-3007)"},
    {    2985,     3048,     3056, "largebin 95 (chunks 3008-3071)"},
    {    3049,     3112,     3120, "largebin 96 (chunks 3072-3135)"},
    {    3113,     3560,     3568, "largebin 97 (chunks 3136-3583)"},
    {    3561,     4072,     4080, "largebin 98 (chunks 3584-4095)"},
    {    4073,     4584,     4592, "largebin 99 (chunks 4096-4607)"},
    {    4585,     5096,     5104, "largebin 100 (chunks 4608-5119)"},
    {    5097,     5608,     5616, "largebin 101 (chunks 5120-5631)"},
    {    5609,     6120,     6128, "largebin 102 (chunks 5632-6143)"},
    {    6121,     6632,     6640, "largebin 103 (chunks 6144-6655)"},
    {    6633,     7144,     7152, "largebin 104 (chunks 6656-7167)"},
    {    7145,     7656,     7664, "largebin 105 (chunks 7168-7679)"},
    {    7657,     8168,     8176, "largebin 106 (chunks 7680-8191)"},
    {    8169,     8680,     8688, "largebin 107 (chunks 8192-8703)"},
    {    8681,     9192,     9200, "largebin 108 (chunks 8704-9215)"},
    {    9193,     9704,     9712, "largebin 109 (chunks 9216-9727)"},
    {    9705,    10216,    10224, "largebin 110 (chunks 9728-10239)"},
    {   10217,    10728,    10736, "largebin 111 (chunks 10240-10751)"},
    {   10729,    12264,    12272, "largebin 112 (chunks 10752-12287)"},
    {   12265,    16360,    16368, "largebin 113 (chunks 12288-16383)"},
    {   16361,    20456,    20464, "largebin 114 (chunks 16384-20479)"},
    {   20457,    24552,    24560, "largebin 115 (chunks 20480-24575)"},
    {   24553,    28648,    28656, "largebin 116 (chunks 24576-28671)"},
    {   28649,    32744,    32752, "largebin 117 (chunks 28672-32767)"},
    {   32745,    36840,    36848, "largebin 118 (chunks 32768-36863)"},
    {   36841,    40936,    40944, "largebin 119 (chunks 36864-40959)"},
    {   40937,    65512,    65520, "largebin 120 (chunks 40960-65535)"},
    {   65513,    98280,    98288, "largebin 121 (chunks 65536-98303)"},
    {   98281,   131048,   131056, "largebin 122 (chunks 98304-131071)"},
    {  131049,     kMax,        0, "mmap"},
};

// ---- jemalloc 5.3 (x86_64: LG_QUANTUM 4, LG_PAGE 12, SC_LG_NGROUP 2; src/sc.c) ----
// Size classes: 8 (tiny), 16..128 by 16, then 4 per doubling.  Small (slab) classes end at
// 14336; large classes (page runs, one per extent) follow, those <= 32 KiB cached per thread
// (opt_tcache_max).  Requests whose class reaches oversize_threshold (8 MiB) go to the dedicated
// huge arena: one row for all of them.  No in-band header: slot = class size.
constexpr SizeClass kJemalloc[] = {
    //     lo        hi      slot   label
    {       0,        8,        8, "small 8"},
    {       9,       16,       16, "small 16"},
    {      17,       32,       32, "small 32"},
    {      33,       48,       48, "small 48"},
    {      49,       64,       64, "small 64"},
    {      65,       80,       80, "small 80"},
    {      81,       96,       96, "small 96"},
    {      97,      112,      112, "small 112"},
    {     113,      128,      128, "small 128"},
    {     129,      160,      160, "small 160"},
    {     161,      192,      192, "small 192"},
    {     193,      224,      224, "small 224"},
    {     225,      256,      256, "small 256"},
    {     257,      320,      320, "small 320"},
    {     321,      384,      384, "small 384"},
    {     385,      448,      448, "small 448"},
    {     449,      512,      512, "small 512"},
    {     513,      640,      640, "small 640"},
    {     641,      768,      768, "small 768"},
    {     769,      896,      896, "small 896"},
    {     897,     1024,     1024, "small 1024"},
    {    1025,     1280,     1280, "small 1280"},
    {    1281,     1536,     1536, "small 1536"},
    {    1537,     1792,     1792, "small 1792"},
    {    1793,     2048,     2048, "small 2048"},
    {    2049,     2560,     2560, "small 2560"},
    {    2561,     3072,     3072, "small 3072"},
    {    3073,     3584,     3584, "small 3584"},
    {    3585,     4096,     4096, "small 4096"},
    {    4097,     5120,     5120, "small 5120"},
    {    5121,     6144,     6144, "small 6144"},
    {    6145,     7168,     7168, "small 7168"},
    {    7169,     8192,     8192, "small 8192"},
    {    8193,    10240,    10240, "small 10240"},
    {   10241,    12288,    12288, "small 12288"},
    {   12289,    14336,    14336, "small 14336"},
    {   14337,    16384,    16384, "large 16384 (tcache)"},
    {   16385,    20480,    20480, "large 20480 (tcache)"},
    {   20481,    24576,    24576, "large 24576 (tcache)"},
    {   24577,    28672,    28672, "large 28672 (tcache)"},
    {   28673,    32768,    32768, "large 32768 (tcache)"},
    {   32769,    40960,    40960, "large 40960"},
    {   40961,    49152,    49152, "large 49152"},
    {   49153,    57344,    57344, "large 57344"},
    {   57345,    65536,    65536, "large 65536"},
    {   65537,    81920,    81920, "large 81920"},
    {   81921,    98304,    98304, "large 98304"},
    {   98305,   114688,   114688, "large 114688"},
    {  114689,   131072,   131072, "large 131072"},
    {  131073,   163840,   163840, "large 163840"},
    {  163841,   196608,   196608, "large 196608"},
    {  196609,   229376,   229376, "large 229376"},
    {  229377,   262144,   262144, "large 262144"},
    {  262145,   327680,   327680, "large 327680"},
    {  327681,   393216,   393216, "large 393216"},
    {  393217,   458752,   458752, "large 458752"},
    {  458753,   524288,   524288, "large 524288"},
    {  524289,   655360,   655360, "large 655360"},
    {  655361,   786432,   786432, "large 786432"},
    {  786433,   917504,   917504, "large 917504"},
    {  917505,  1048576,  1048576, "large 1048576"},
    { 1048577,  1310720,  1310720, "large 1310720"},
    { 1310721,  1572864,  1572864, "large 1572864"},
    { 1572865,  1835008,  1835008, "large 1835008"},
    { 1835009,  2097152,  2097152, "large 2097152"},
    { 2097153,  2621440,  2621440, "large 2621440"},
    { 2621441,  3145728,  3145728, "large 3145728"},
    { 3145729,  3670016,  3670016, "large 3670016"},
    { 3670017,  4194304,  4194304, "large 4194304"},
    { 4194305,  5242880,  5242880, "large 5242880"},
    { 5242881,  6291456,  6291456, "large 6291456"},
    { 6291457,  7340032,  7340032, "large 7340032"},
    { 7340033,     kMax,        0, "huge (oversize arena)"},
};

// ---- tcmalloc, gperftools 2.10 (libtcmalloc_minimal.so.4: src/common.{h,cc}) ----
// The small classes are computed at start-up by SizeMap::Init; the rows are its result for the
// defaults kPageShift 13 (8 KiB pages), kAlignment 8, kMinAlign 16, kMaxSize 256 KiB and
// TCMALLOC_TRANSFER_NUM_OBJ unset (32): sizes step by 8 below 16, by 16 below 128, then by 1/8 of
// their power of two (at most a page); a size joins the previous class when its span would have
// the same pages and object count.  85 classes, slot = class size, no header.  Larger requests
// are page runs from the page heap (spans < 128 pages in exact-length lists, larger in a set).
constexpr SizeClass kTcmalloc[] = {
    //     lo        hi      slot   label
    {       0,        8,        8, "class 1 (8 B)"},
    {       9,       16,       16, "class 2 (16 B)"},
    {      17,       32,       32, "class 3 (32 B)"},
    {      33,       48,       48, "class 4 (48 B)"},
    {      49,       64,       64, "class 5 (64 B)"},
    {      65,       80,       80, "class 6 (80 B)"},
    {      81,       96,       96, "class 7 (96 B)"},
    {      97,      112,      112, "class 8 (112 B)"},
    {     113,      128,      128, "class 9 (128 B)"},
    {     129,      144,      144, "class 10 (144 B)"},
    {     145,      160,      160, "class 11 (160 B)"},
    {     161,      176,      176, "class 12 (176 B)"},
    {     177,      192,      192, "class 13 (192 B)"},
    {     193,      208,      208, "class 14 (208 B)"},
    {     209,      224,      224, "class 15 (224 B)"},
    {     225,      240,      240, "class 16 (240 B)"},
    {     241,      256,      256, "class 17 (256 B)"},
    {     257,      288,      288, "class 18 (288 B)"},
    {     289,      320,      320, "class 19 (320 B)"},
    {     321,      352,      352, "class 20 (352 B)"},
    {     353,      384,      384, "class 21 (384 B)"},
    {     385,      416,      416, "class 22 (416 B)"},
    {     417,      448,      448, "class 23 (448 B)"},
    {     449,      480,      480, "class 24 (480 B)"},
    {     481,      512,      512, "class 25 (512 B)"},
    {     513,      576,      576, "class 26 (576 B)"},
    {     577,      640,      640, "class 27 (640 B)"},
    {     641,      704,      704, "class 28 (704 B)"},
    {     705,      768,      768, "class 29 (768 B)"},
    {     769,      896,      896, "class 30 (896 B)"},
    {     897,     1024,     1024, "class 31 (1024 B)"},
    {    1025,     1152,     1152, "class 32 (1152 B)"},
    {    1153,     1280,     1280, "class 33 (1280 B)"},
    {    1281,     1408,     1408, "class 34 (1408 B)"},
    {    1409,     1536,     1536, "class 35 (1536 B)"},
    {    1537,     1792,     1792, "class 36 (1792 B)"},
    {    1793,     2048,     2048, "class 37 (2048 B)"},
    {    2049,     2304,     2304, "class 38 (2304 B)"},
    {    2305,     2560,     2560, "class 39 (2560 B)"},
    {    2561,     2816,     2816, "class 40 (2816 B)"},
    {    2817,     3072,     3072, "class 41 (3072 B)"},
    {    3073,     3328,     3328, "class 42 (3328 B)"},
    {    3329,     4096,     4096, "class 43 (4096 B)"},
    {    4097,     4608,     4608, "class 44 (4608 B)"},
    {    4609,     5120,     5120, "class 45 (5120 B)"},
    {    5121,     6144,     6144, "class 46 (6144 B)"},
    {    6145,     6656,     6656, "class 47 (6656 B)"},
    {    6657,     8192,     8192, "class 48 (8192 B)"},
    {    8193,     9216,     9216, "class 49 (9216 B)"},
    {    9217,    10240,    10240, "class 50 (10240 B)"},
    {   10241,    12288,    12288, "class 51 (12288 B)"},
    {   12289,    13312,    13312, "class 52 (13312 B)"},
    {   13313,    16384,    16384, "class 53 (16384 B)"},
    {   16385,    20480,    20480, "class 54 (20480 B)"},
    {   20481,    24576,    24576, "class 55 (24576 B)"},
    {   24577,    26624,    26624, "class 56 (26624 B)"},
    {   26625,    32768,    32768, "class 57 (32768 B)"},
    {   32769,    40960,    40960, "class 58 (40960 B)"},
    {   40961,    49152,    49152, "class 59 (49152 B)"},
    {   49153,    57344,    57344, "class 60 (57344 B)"},
    {   57345,    65536,    65536, "class 61 (65536 B)"},
    {   65537,    73728,    73728, "class 62 (73728 B)"},
    {   73729,    81920,    81920, "class 63 (81920 B)"},
    {   81921,    90112,    90112, "class 64 (90112 B)"},
    {   90113,    98304,    98304, "class 65 (98304 B)"},
    {   98305,   106496,   106496, "class 66 (106496 B)"},
    {  106497,   114688,   114688, "class 67 (114688 B)"},
    {  114689,   122880,   122880, "class 68 (122880 B)"},
    {  122881,   131072,   131072, "class 69 (131072 B)"},
    {  131073,   139264,   139264, "class 70 (139264 B)"},
    {  139265,   147456,   147456, "class 71 (147456 B)"},
    {  147457,   155648,   155648, "class 72 (155648 B)"},
    {  155649,   163840,   163840, "class 73 (163840 B)"},
    {  163841,   172032,   172032, "class 74 (172032 B)"},
    {  172033,   180224,   180224, "class 75 (180224 B)"},
    {  180225,   188416,   188416, "class 76 (188416 B)"},
    {  188417,   196608,   196608, "class 77 (196608 B)"},
    {  196609,   204800,   204800, "class 78 (204800 B)"},
    {  204801,   212992,   212992, "class 79 (212992 B)"},
    {  212993,   221184,   221184, "class 80 (221184 B)"},
    {  221185,   229376,   229376, "class 81 (229376 B)"},
    {  229377,   237568,   237568, "class 82 (237568 B)"},
    {  237569,   245760,   245760, "class 83 (245760 B)"},
    {  245761,   253952,   253952, "class 84 (253952 B)"},
    {  253953,   262144,   262144, "class 85 (262144 B)"},
    {  262145,  1040384,        0, "large (< 1 MiB, span lists)"},
    { 1040385,     kMax,        0, "large (>= 1 MiB, span set)"},
};

// ---- mimalloc 2.0.9 (x86_64: src/page-queue.c mi_bin, include/mimalloc-types.h) ----
// Bins in 8-byte words: up to 8 words, rounded to even word counts (MI_MAX_ALIGN_SIZE 16 makes
// it MI_ALIGN2W: 8, 16, 32, 48, 64 bytes); above, 4 bins per doubling, up to
// MI_MEDIUM_OBJ_SIZE_MAX (128 KiB).  Slot = bin size, no header (release builds: no padding).
// Larger requests share the huge bin: one block per page of 64 KiB slices inside a segment up to
// MI_LARGE_OBJ_SIZE_MAX (16 MiB, half a 32 MiB segment), a segment of their own beyond.
constexpr SizeClass kMimalloc[] = {
    //     lo        hi      slot   label
    {       0,        8,        8, "bin 1 (8 B)"},
    {       9,       16,       16, "bin 2 (16 B)"},
    {      17,       32,       32, "bin 4 (32 B)"},
    {      33,       48,       48, "bin 6 (48 B)"},
    {      49,       64,       64, "bin 8 (64 B)"},
    {      65,       80,       80, "bin 9 (80 B)"},
    {      81,       96,       96, "bin 10 (96 B)"},
    {      97,      112,      112, "bin 11 (112 B)"},
    {     113,      128,      128, "bin 12 (128 B)"},
    {     129,      160,      160, "bin 13 (160 B)"},
    {     161,      192,      192, "bin 14 (192 B)"},
    {     193,      224,      224, "bin 15 (224 B)"},
    {     225,      256,      256, "bin 16 (256 B)"},
    {     257,      320,      320, "bin 17 (320 B)"},
    {     321,      384,      384, "bin 18 (384 B)"},
    {     385,      448,      448, "bin 19 (448 B)"},
    {     449,      512,      512, "bin 20 (512 B)"},
    {     513,      640,      640, "bin 21 (640 B)"},
    {     641,      768,      768, "bin 22 (768 B)"},
    {     769,      896,      896, "bin 23 (896 B)"},
    {     897,     1024,     1024, "bin 24 (1024 B)"},
    {    1025,     1280,     1280, "bin 25 (1280 B)"},
    {    1281,     1536,     1536, "bin 26 (1536 B)"},
    {    1537,     1792,     1792, "bin 27 (1792 B)"},
    {    1793,     2048,     2048, "bin 28 (2048 B)"},
    {    2049,     2560,     2560, "bin 29 (2560 B)"},
    {    2561,     3072,     3072, "bin 30 (3072 B)"},
    {    3073,     3584,     3584, "bin 31 (3584 B)"},
    {    3585,     4096,     4096, "bin 32 (4096 B)"},
    {    4097,     5120,     5120, "bin 33 (5120 B)"},
    {    5121,     6144,     6144, "bin 34 (6144 B)"},
    {    6145,     7168,     7168, "bin 35 (7168 B)"},
    {    7169,     8192,     8192, "bin 36 (8192 B)"},
    {    8193,    10240,    10240, "bin 37 (10240 B)"},
    {   10241,    12288,    12288, "bin 38 (12288 B)"},
    {   12289,    14336,    14336, "bin 39 (14336 B)"},
    {   14337,    16384,    16384, "bin 40 (16384 B)"},
    {   16385,    20480,    20480, "bin 41 (20480 B)"},
    {   20481,    24576,    24576, "bin 42 (24576 B)"},
    {   24577,    28672,    28672, "bin 43 (28672 B)"},
    {   28673,    32768,    32768, "bin 44 (32768 B)"},
    {   32769,    40960,    40960, "bin 45 (40960 B)"},
    {   40961,    49152,    49152, "bin 46 (49152 B)"},
    {   49153,    57344,    57344, "bin 47 (57344 B)"},
    {   57345,    65536,    65536, "bin 48 (65536 B)"},
    {   65537,    81920,    81920, "bin 49 (81920 B)"},
    {   81921,    98304,    98304, "bin 50 (98304 B)"},
    {   98305,   114688,   114688, "bin 51 (114688 B)"},
    {  114689,   131072,   131072, "bin 52 (131072 B)"},
    {  131073, 16777216,        0, "large (1 block per page)"},
    {16777217,     kMax,        0, "huge (own segment)"},
};

// ---- scudo standalone (LLVM 14: compiler-rt/lib/scudo/standalone/{size_class_map.h,combined.h})
// DefaultSizeClassMap (NumBits 3, MinSizeLog 5, MidSizeLog 8, MaxSizeLog 17): classes 1..8 are
// 32..256 by 32, then 4 per doubling up to 128 KiB (class 0 holds the allocator's batches).  A
// request n needs roundup(n, 16) + 16 bytes (the 16-byte chunk header), so hi = slot - 16.
// Requests needing more than 128 KiB go to the secondary (mmap, with a cache of freed blocks).
constexpr SizeClass kScudo[] = {
    //     lo        hi      slot   label
    {       0,       16,       32, "class 1 (32 B)"},
    {      17,       48,       64, "class 2 (64 B)"},
    {      49,       80,       96, "class 3 (96 B)"},
    {      81,      112,      128, "class 4 (128 B)"},
    {     113,      144,      160, "class 5 (160 B)"},
    {     145,      176,      192, "class 6 (192 B)"},
    {     177,      208,      224, "class 7 (224 B)"},
    {     209,      240,      256, "class 8 (256 B)"},
    {     241,      304,      320, "class 9 (320 B)"},
    {     305,      368,      384, "class 10 (384 B)"},
    {     369,      432,      448, "class 11 (448 B)"},
    {     433,      496,      512, "class 12 (512 B)"},
    {     497,      624,      640, "class 13 (640 B)"},
    {     625,      752,      768, "class 14 (768 B)"},
    {     753,      880,      896, "class 15 (896 B)"},
    {     881,     1008,     1024, "class 16 (1024 B)"},
    {    1009,     1264,     1280, "class 17 (1280 B)"},
    {    1265,     1520,     1536, "class 18 (1536 B)"},
    {    1521,     1776,     1792, "class 19 (1792 B)"},
    {    1777,     2032,     2048, "class 20 (2048 B)"},
    {    2033,     2544,     2560, "class 21 (2560 B)"},
    {    2545,     3056,     3072, "class 22 (3072 B)"},
    {    3057,     3568,     3584, "class 23 (3584 B)"},
    {    3569,     4080,     4096, "class 24 (4096 B)"},
    {    4081,     5104,     5120, "class 25 (5120 B)"},
    {    5105,     6128,     6144, "class 26 (6144 B)"},
    {    6129,     7152,     7168, "class 27 (7168 B)"},
    {    7153,     8176,     8192, "class 28 (8192 B)"},
    {    8177,    10224,    10240, "class 29 (10240 B)"},
    {   10225,    12272,    12288, "class 30 (12288 B)"},
    {   12273,    14320,    14336, "class 31 (14336 B)"},
    {   14321,    16368,    16384, "class 32 (16384 B)"},
    {   16369,    20464,    20480, "class 33 (20480 B)"},
    {   20465,    24560,    24576, "class 34 (24576 B)"},
    {   24561,    28656,    28672, "class 35 (28672 B)"},
    {   28657,    32752,    32768, "class 36 (32768 B)"},
    {   32753,    40944,    40960, "class 37 (40960 B)"},
    {   40945,    49136,    49152, "class 38 (49152 B)"},
    {   49137,    57328,    57344, "class 39 (57344 B)"},
    {   57329,    65520,    65536, "class 40 (65536 B)"},
    {   65521,    81904,    81920, "class 41 (81920 B)"},
    {   81905,    98288,    98304, "class 42 (98304 B)"},
    {   98289,   114672,   114688, "class 43 (114688 B)"},
    {  114673,   131056,   131072, "class 44 (131072 B)"},
    {  131057,     kMax,        0, "secondary (mmap)"},
};

constexpr ClassTable kMuslTable{"musl", "musl 1.2.3 mallocng", 4, kMusl};
constexpr ClassTable kGlibcTable{"glibc", "glibc 2.36 malloc (x86_64)", 8, kGlibc};
constexpr ClassTable kJemallocTable{"jemalloc", "jemalloc 5.3 (x86_64, 4 KiB pages)", 0, kJemalloc};
constexpr ClassTable kTcmallocTable{"tcmalloc", "gperftools 2.10 tcmalloc (8 KiB pages)", 0,
                                   kTcmalloc};
constexpr ClassTable kMimallocTable{"mimalloc", "mimalloc 2.0.9 (x86_64)", 0, kMimalloc};
constexpr ClassTable kScudoTable{"scudo", "scudo standalone, LLVM 14 (DefaultSizeClassMap)", 16,
                                 kScudo};

constexpr const ClassTable* kAllocatorTables[] = {&kGlibcTable,    &kMuslTable,     &kJemallocTable,
                                                  &kTcmallocTable, &kMimallocTable, &kScudoTable};

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

size_t ClassTable::class_of(uint64_t request) const {
  // The first class whose hi is >= request; the last class ends at 2^64-1.
  const auto it = std::lower_bound(classes_.begin(), classes_.end(), request,
                                   [](const SizeClass& c, uint64_t v) { return c.hi < v; });
  return it == classes_.end() ? classes_.size() - 1 : static_cast<size_t>(it - classes_.begin());
}

ClassLookup::ClassLookup(const ClassTable& table) : table_(table) {
  for (unsigned b = 0; b < kSizeBuckets; ++b) {
    first_[b] = static_cast<uint32_t>(table.class_of(bucket_lo(b)));
    last_[b] = static_cast<uint32_t>(table.class_of(bucket_hi(b)));
  }
}

size_t ClassLookup::operator()(uint64_t request) const {
  const unsigned b = bucket_of(request);
  if (first_[b] == last_[b]) return first_[b];
  const auto classes = table_.classes();
  const auto begin = classes.begin() + first_[b], end = classes.begin() + last_[b] + 1;
  const auto it = std::lower_bound(begin, end, request, [](const SizeClass& c, uint64_t v) { return c.hi < v; });
  return static_cast<size_t>(it - classes.begin());
}

const ClassTable* class_table_for(std::string_view allocator_path, format::Libc libc) {
  const std::string_view name = base_name(allocator_path);
  if (name.empty()) return nullptr;
  if (contains(name, "jemalloc")) return &kJemallocTable;
  if (contains(name, "tcmalloc")) return contains(name, "debug") ? nullptr : &kTcmallocTable;
  if (contains(name, "mimalloc")) return &kMimallocTable;
  if (contains(name, "scudo")) {
    // libclang_rt.scudo-<arch>.so and scudo_minimal are the older, sanitizer-based scudo.
    const bool legacy = name.starts_with("libclang_rt.scudo-") ||
                        name.starts_with("libclang_rt.scudo_minimal");
    return legacy ? nullptr : &kScudoTable;
  }
  if (name.starts_with("ld-musl") || name.starts_with("libc.musl")) return &kMuslTable;
  if (name.starts_with("libc.so") || name.starts_with("libc-")) {
    if (libc == format::Libc::Musl) return &kMuslTable;
    if (libc == format::Libc::Glibc || name == "libc.so.6") return &kGlibcTable;
  }
  return nullptr;
}

const ClassTable& bucket_class_table() {
  struct Buckets {
    std::vector<std::string> labels;
    std::vector<SizeClass> classes;
    ClassTable table{"buckets", "log-linear size buckets (4 per power of two)", 0, {}};
    Buckets() {
      labels.reserve(kSizeBuckets);
      for (unsigned b = 0; b < kSizeBuckets; ++b) {
        const uint64_t lo = bucket_lo(b), hi = bucket_hi(b);
        labels.push_back(lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi));
      }
      for (unsigned b = 0; b < kSizeBuckets; ++b) {
        classes.push_back(SizeClass{bucket_lo(b), bucket_hi(b), 0, labels[b]});
      }
      table = ClassTable{"buckets", "log-linear size buckets (4 per power of two)", 0, classes};
    }
  };
  static const Buckets buckets;
  return buckets.table;
}

std::span<const ClassTable* const> allocator_class_tables() { return kAllocatorTables; }

}  // namespace allocscope
