import sys, re, collections
# perf script output → share of samples per phase of a push session (first match wins, in order)
rules = [
 ("Go monitor thread (sysmon)", r"runtime\.sysmon"),
 ("GC", r"gcBgMarkWorker|gcDrain|gcAssist|bgsweep|bgscavenge"),
 ("accept", r"TCPListener\)\.accept|acceptLoop$"),
 ("101 write (hijack)", r"h1UpgradeWriter\)\.Hijack"),
 ("handshake: handler chain, library checks", r"serveUpgrade"),
 ("request head read", r"h1Conn\)\.readLoop|h1Conn\)\.serve"),
 ("start message read + parse", r"session\)\.readStart"),
 ("set-up, policy, keyframe wait", r"session\)\.setup|awaitKeyframe|setNotSentLowat"),
 ("join: ready, init, catch-up writev", r"fanout\)\.join"),
 ("steady fan-out writes", r"fanout\)\.run"),
 ("session end (client's close read, close)", r"session\)\.readLoop|CloseNow|session\)\.finish|session\)\.run"),
 ("scheduler, netpoll (idle/wake)", r"runtime\.(findRunnable|schedule|netpoll|park_m|mcall|goexit0)"),
 ("/metrics scrapes", r"promhttp|prometheus"),
]
samples=[];cur=[]
for line in open(sys.argv[1]):
    line=line.rstrip('\n')
    if not line.strip():
        if cur: samples.append(cur)
        cur=[]; continue
    if line[0] in '\t ':
        p=line.strip().split(None,1)
        if len(p)==2: cur.append(re.sub(r'\+0x[0-9a-f]+$','',p[1].split(' (')[0]))
    else: cur=[]
if cur: samples.append(cur)
c=collections.Counter()
for st in samples:
    for name,pat in rules:
        if any(re.search(pat,s) for s in st):
            c[name]+=1; break
    else: c["other"]+=1
N=len(samples)
print(f"samples {N}")
for name,_ in rules+[("other",None)]:
    print(f"{100*c[name]/N:5.1f}%  {name}")
