exec(open('/tmp/splitwork/v5.py').read())
put('core','rebuildProgress','RebuildReport','rebuildProgress.report','RebuildReport.add','RebuildReport.Rate','RebuildReport.ETA')
FIELD['Node.rebuild']='core'
