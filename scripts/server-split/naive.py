ORDER=['peer','core','repair','cmds','node']
def FILE_DEFAULT(f):
    if f.startswith('peer'): return 'peer'
    if f.startswith('datapath'): return 'core'
    if f.startswith('cmd_'): return 'cmds'
    if f.startswith('repair_'): return 'repair'
    if f.startswith('schemes'): return 'core'
    return 'node'
OVR={}
FIELD={}
